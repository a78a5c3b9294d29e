import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import * as admin from '../../src/modules/admin/index.ts';
import { DISPATCH_QUEUE } from '../../src/modules/migration-jobs/index.ts';
import { plantConflictAt, plantTrigger } from '../support/accounts.ts';
import { startFakeVendor } from '../support/fake-vendor.ts';
import { STAGE_URL, twoLooks, waitUntil } from '../support/imports.ts';
import { countedRecords, runJobToEnd } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant, type TestApp } from '../support/test-app.ts';

// Migration jobs (D11) over HTTP, with the queue workers of this process running the records. A
// window of 3 records on the queue per job, so most jobs here are sent to the queue in several goes.
const WINDOW = 3;
const t = await buildTestApp({
  WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '2', JOB_RETRY_DELAY_SECONDS: '0', JOB_PAUSE_RECHECK_SECONDS: '1', JOB_DISPATCH_WINDOW: String(WINDOW),
});
const db = t.store.db;
// The two ways a record runs: `t` sends each record to the queue on its own (a window of 3 over 4
// workers makes chunks of one line), so each runs step by step (record-pipeline.ts); `chunks`, one
// worker and the default window, sends a started job's records as one chunk, whose new, clean
// records are written together and whose others are handed back one line each (record-chunk.ts).
const chunks = await buildTestApp({ WORKER_CONCURRENCY: '1', JOB_RETRY_LIMIT: '2', JOB_RETRY_DELAY_SECONDS: '0' });
const PATHS = [{ path: 'one record at a time', app: t }, { path: 'in a chunk', app: chunks }] as const;
const vendor = await startFakeVendor();
const BASE = '/v1/data-import/migration-jobs/';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const ZERO = { total: 0, pending: 0, running: 0, succeeded: 0, skipped: 0, failed: 0, cancelled: 0 };

async function newJob(tenant: Tenant, extra: Record<string, unknown> = {}) {
  const res = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, ...extra } });
  assert.equal(res.status, 201, res.body);
  return res.json as { id: string; state: string };
}

async function upload(tenant: Tenant, id: string, lines: Array<string | object>, headers: Record<string, string> = {}, gzip = false) {
  const text = lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n');
  const res = await t.app.inject({
    method: 'POST', url: `${BASE}${id}/records/`, payload: gzip ? gzipSync(text) : text,
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson', ...(gzip ? { 'content-encoding': 'gzip' } : {}), ...headers },
  });
  return { status: res.statusCode, json: res.json() };
}

const action = (tenant: Tenant, id: string, name: 'start' | 'cancel' | 'retry') => call(t.app, 'POST', `${BASE}${id}/${name}/`, { token: tenant.token });
const getJob = async (tenant: Tenant, id: string) => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json;

async function results(tenant: Tenant, id: string, query = '', accept?: string) {
  const res = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/${query}`, headers: { authorization: `Token ${tenant.token}`, ...(accept ? { accept } : {}) } });
  return { status: res.statusCode, type: res.headers['content-type'], body: res.body, lines: res.body.split('\n').filter(Boolean) };
}
async function resultsOf(tenant: Tenant, id: string, query = '') {
  return (await results(tenant, id, query)).lines.map((l) => JSON.parse(l));
}

async function finished(tenant: Tenant, id: string, state = 'completed', timeoutMs = 60_000) {
  await waitUntil(async () => (await getJob(tenant, id)).state === state, `job ${id} is ${state}`, timeoutMs);
  const job = await getJob(tenant, id);
  assert.deepEqual(job.counts, await countedRecords(db, id), 'the view\'s counts agree with a full count of the records');
  return job;
}

const statement = (id: string, from: string, to: string) => ({
  bill_period_from_date: from, bill_period_to_date: to, statement_id: id, issued_date: to, number: `No-${id}`, gross_amount: 120.5,
});
const charge = (id: string, extra: Record<string, unknown> = {}) =>
  ({ transaction_id: id, transaction_date: '2024-03-01', amount: 12.3, type: 'CHARGE', reason: 'IMPORTED_CHARGE', ...extra });

/** The job's end events (D13), read from the table (the feed is tested in events.test.ts). */
async function jobEvents(id: string) {
  const { rows } = await sql<{ type: string; external_account_number: string | null; data: any }>`
    SELECT type, external_account_number, data FROM events WHERE type LIKE 'migration_job.%' AND data->>'job_id' = ${id} ORDER BY id`.execute(db);
  return rows;
}

/** The lines of each record queue job the job's records were sent in (a hand-back or a send for later is a job of its own). */
async function recordQueueJobs(app: TestApp, id: string): Promise<number[][]> {
  const { rows } = await sql<{ lines: number[] }>`SELECT data->'lines' AS lines FROM pgboss.job
    WHERE name = 'migration_record' AND data->>'job_id' = ${id}`.execute(app.store.db);
  return rows.map((r) => r.lines).sort((a, b) => a[0]! - b[0]! || b.length - a.length);
}

/** Each record's line and how many times a worker claimed it to run it. */
async function attemptsOf(app: TestApp, id: string): Promise<Array<{ line: number; attempts: number }>> {
  const { rows } = await sql<{ line: number; attempts: number }>`SELECT line, attempts FROM migration_job_records
    WHERE job_id = ${id}::uuid ORDER BY line`.execute(app.store.db);
  return rows;
}

async function createVendor(secret?: string): Promise<string> {
  const code = unique('VEND');
  await admin.createVendor(db, code, { kind: 'http', url: vendor.url, secret, timeoutMs: 2000 });
  return code;
}

async function rowsOf(table: 'notes' | 'transactions' | 'statements' | 'payment_instructions', number: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} x JOIN accounts a ON a.id = x.account_id WHERE a.number = ${number}`.execute(db);
  return rows[0]!.n;
}

describe('POST migration-jobs/', () => {
  test('201 an open job with zero counts', async () => {
    const tenant = await createTenant(t);
    const res = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    assert.equal(res.status, 201);
    assert.match(res.json.id, UUID);
    assert.match(res.json.created_at, UTC);
    assert.deepEqual({ ...res.json, id: 'ID', created_at: 'AT' }, {
      id: 'ID', import_supplier: tenant.supplier, operations_team_name: tenant.team, dry_run: false, on_drift: 'warn', state: 'open', paused: false,
      max_records_per_minute: null, not_before: null, not_after: null, created_at: 'AT', started_at: null, finished_at: null,
      counts: ZERO, records_with_warnings: 0, errors_by_code: [], records_per_minute: 0, eta_seconds: null,
    });
  });

  test('a team named with 200 characters, as long as a team name may be, runs jobs; 201 is max_length', async () => {
    const tenant = await createTenant(t);
    const { operations_team: team } = await admin.createTeam(db, `${unique('T')}-`.padEnd(200, 'x'));
    assert.equal(team.length, 200);
    const post = (name: string) => call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: name } });
    const created = await post(team);
    assert.deepEqual([created.status, created.json.operations_team_name], [201, team]);
    const long = await post(`${team}x`);
    assert.deepEqual([long.status, long.json.errors], [400, [{ code: 'max_length', attr: 'operations_team_name', detail: 'Ensure this field has no more than 200 characters.' }]]);
  });

  test('400s: body rules, unknown or foreign supplier, complete supplier, unknown team', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const post = (body: unknown) => call(t.app, 'POST', BASE, { token: tenant.token, body });
    assert.deepEqual((await post({ import_supplier: tenant.supplier })).json, {
      detail: 'The request failed validation.', code: 'invalid',
      errors: [{ code: 'required', attr: 'operations_team_name', detail: 'This field is required.' }],
    });
    assert.deepEqual((await post({ import_supplier: other.supplier, operations_team_name: tenant.team })).json, {
      detail: `No import supplier with code "${other.supplier}".`, code: 'import_supplier_not_found',
      errors: [{ detail: `No import supplier with code "${other.supplier}".`, code: 'import_supplier_not_found', attr: 'import_supplier' }],
    });
    assert.deepEqual((await post({ import_supplier: tenant.supplier, operations_team_name: 'no-such-team' })).json, {
      detail: 'No operations team named "no-such-team".', code: 'operations_team_not_found',
      errors: [{ detail: 'No operations team named "no-such-team".', code: 'operations_team_not_found', attr: 'operations_team_name' }],
    });
    const res = await post({ import_supplier: tenant.supplier, operations_team_name: tenant.team, not_before: '2030-01-02T00:00:00Z', not_after: '2030-01-01T00:00:00Z' });
    assert.deepEqual(res.json, { detail: 'The request failed validation.', code: 'invalid', errors: [{ code: 'invalid_date_range', attr: 'not_after', detail: 'not_after must be after not_before.' }] });
    // A not_after already past, by the service's clock: a second before now is refused, a second after is not.
    const now = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000);
    const utc = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    t.clock.set(now);
    try {
      const past = await post({ import_supplier: tenant.supplier, operations_team_name: tenant.team, not_after: utc(now.getTime()) });
      assert.deepEqual([past.status, past.json], [400, { detail: 'The request failed validation.', code: 'invalid', errors: [{
        code: 'invalid_date_range', attr: 'not_after', detail: `not_after must be in the future; it is ${utc(now.getTime())} and the time is now ${utc(now.getTime())}.`,
      }] }]);
      const ahead = await post({ import_supplier: tenant.supplier, operations_team_name: tenant.team, not_after: utc(now.getTime() + 1000) });
      assert.deepEqual([ahead.status, ahead.json.not_after], [201, utc(now.getTime() + 1000)]);
    } finally {
      t.clock.reset();
    }
    await admin.setSupplier(db, tenant.supplier, { status: 'complete' });
    await t.directory.sync();
    assert.deepEqual((await post({ import_supplier: tenant.supplier, operations_team_name: tenant.team })).json, {
      detail: `Import supplier "${tenant.supplier}" is complete.`, code: 'import_supplier_complete',
      errors: [{ detail: `Import supplier "${tenant.supplier}" is complete.`, code: 'import_supplier_complete', attr: 'import_supplier' }],
    });
  });
});

describe('POST migration-jobs/<id>/records/', () => {
  test('lines are numbered across uploads; blank lines skipped; bad lines and duplicates fail at once', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    const a = accountPayload(tenant.supplier);
    const b = accountPayload(tenant.supplier);
    assert.deepEqual(await upload(tenant, job.id, [{ account: a }, '', '   ', 'not json', '[1,2]']), { status: 200, json: { received: 3, total_records: 3 } });
    assert.deepEqual(await upload(tenant, job.id, [{ account: b }, { account: a }, { account: b, extra: 1 }, { notes: [] }], {}, true),
      { status: 200, json: { received: 4, total_records: 7 } });
    const lines = await resultsOf(tenant, job.id);
    const base = { created: null, service_account_number: null, dry_run: false, warnings: [] };
    assert.deepEqual(lines.map((l) => ({ ...l, finished_at: l.finished_at && 'AT' })), [
      { line: 1, external_account_number: a.external_account_number, outcome: 'pending', step: null, ...base, errors: [], finished_at: null },
      { line: 2, external_account_number: null, outcome: 'failed', step: 'parse', ...base, errors: [{ code: 'parse_error', attr: 'non_field_errors', detail: 'The line is not valid JSON.' }], finished_at: 'AT' },
      { line: 3, external_account_number: null, outcome: 'failed', step: 'parse', ...base, errors: [{ code: 'parse_error', attr: 'non_field_errors', detail: 'The line is not a JSON object.' }], finished_at: 'AT' },
      { line: 4, external_account_number: b.external_account_number, outcome: 'pending', step: null, ...base, errors: [], finished_at: null },
      { line: 5, external_account_number: a.external_account_number, outcome: 'failed', step: 'account', ...base, errors: [{ code: 'duplicate_in_file', attr: 'account.external_account_number', detail: `Account "${a.external_account_number}" is already on line 1 of this job; a job holds each account once.` }], finished_at: 'AT' },
      { line: 6, external_account_number: b.external_account_number, outcome: 'failed', step: 'parse', ...base, errors: [{ code: 'unknown_field', attr: 'extra', detail: 'This field is not part of the documented payload and must not be sent.' }], finished_at: 'AT' },
      { line: 7, external_account_number: null, outcome: 'failed', step: 'parse', ...base, errors: [{ code: 'required', attr: 'account', detail: 'This field is required.' }], finished_at: 'AT' },
    ]);
    assert.deepEqual((await getJob(tenant, job.id)).counts, { ...ZERO, total: 7, pending: 2, failed: 5 });
  });

  test('a line longer than BODY_LIMIT_BYTES is payload_too_large at parse; the upload goes on', async () => {
    const small = await buildTestApp({ BODY_LIMIT_BYTES: '2048' });
    const tenant = await createTenant(small);
    const created = await call(small.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const long = JSON.stringify({ account: { ...accountPayload(tenant.supplier), padding: 'x'.repeat(3000) } });
    const short = JSON.stringify({ account: { external_account_number: 'E-1' } });
    const res = await small.app.inject({ method: 'POST', url: `${BASE}${created.json.id}/records/`, payload: `${long}\n${short}\n`,
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
    assert.deepEqual(res.json(), { received: 2, total_records: 2 });
    const lines = (await small.app.inject({ method: 'GET', url: `${BASE}${created.json.id}/records/?outcome=failed`, headers: { authorization: `Token ${tenant.token}` } })).body.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => [l.line, l.step, l.errors]), [[1, 'parse', [{ code: 'payload_too_large', attr: 'non_field_errors', detail: `The line is ${long.length} bytes; a record is at most 2048 bytes (BODY_LIMIT_BYTES).` }]]]);
  });

  test('JOB_MAX_RECORDS: more is migration_job_too_large, and the records before it are kept', async () => {
    const small = await buildTestApp({ JOB_MAX_RECORDS: '3' });
    const tenant = await createTenant(small);
    const created = await call(small.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const body = [1, 2, 3, 4, 5].map(() => JSON.stringify({ account: accountPayload(tenant.supplier) })).join('\n');
    const res = await small.app.inject({ method: 'POST', url: `${BASE}${created.json.id}/records/`, payload: body,
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { detail: 'A job holds at most 3 records; the first 3 are kept.', code: 'migration_job_too_large', received: 3, total_records: 3 });
  });

  test('JOB_MAX_RECORDS reached in a later batch, while the batch after it is read: the lines up to the limit are kept, in order', async () => {
    // Batches of 500 are written one after another while the next is read: the second batch's write
    // finds the limit while the third is being read; nothing of the third is written.
    const small = await buildTestApp({ JOB_MAX_RECORDS: '600' });
    const tenant = await createTenant(small);
    const created = await call(small.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const body = Array.from({ length: 1400 }, (_, n) => JSON.stringify({ account: { external_account_number: `CAP-${n + 1}` } })).join('\n');
    const res = await small.app.inject({ method: 'POST', url: `${BASE}${created.json.id}/records/`, payload: body,
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { detail: 'A job holds at most 600 records; the first 600 are kept.', code: 'migration_job_too_large', received: 600, total_records: 600 });
    const { rows } = await sql<{ line: number; n: string }>`SELECT line, external_account_number AS n FROM migration_job_records
      WHERE job_id = ${created.json.id}::uuid ORDER BY line`.execute(small.store.db);
    assert.equal(rows.length, 600);
    assert.ok(rows.every((row, i) => row.line === i + 1 && row.n === `CAP-${i + 1}`), 'line n holds the nth line sent');
  });

  test('a batch the database rolls back ends the upload: no line read after it is written, so no line is lost in the middle', async () => {
    // The second batch's write is rolled back (a planted deadlock) while the third batch is read.
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    const prefix = unique('ROLLED');
    const planted = await plantConflictAt(t.store.db, { table: 'migration_job_records', event: 'INSERT', when: `NEW.external_account_number = '${prefix}-501'` });
    try {
      const body = Array.from({ length: 2000 }, (_, n) => JSON.stringify({ account: { external_account_number: `${prefix}-${n + 1}` } })).join('\n');
      const res = await t.app.inject({ method: 'POST', url: `${BASE}${job.id}/records/`, payload: body,
        headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(await planted.fired(), true);
    } finally {
      await planted.remove();
    }
    const { rows } = await sql<{ line: number; n: string }>`SELECT line, external_account_number AS n FROM migration_job_records
      WHERE job_id = ${job.id}::uuid ORDER BY line`.execute(t.store.db);
    assert.equal(rows.length, 500, 'the first batch only');
    assert.ok(rows.every((row, i) => row.line === i + 1 && row.n === `${prefix}-${i + 1}`), 'line n holds the nth line sent');
  });

  test('a job started by another request during an upload: the upload is refused with what the job kept, and keeps it', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    const prefix = unique('RACED');
    const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, n) => `${JSON.stringify({ account: { external_account_number: `${prefix}-${from + n}` } })}\n`).join('');
    const body = new PassThrough();
    const answer = t.app.inject({ method: 'POST', url: `${BASE}${job.id}/records/`, payload: body,
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
    body.write(lines(1, 600));
    const held = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM migration_job_records WHERE job_id = ${job.id}::uuid`.execute(t.store.db)).rows[0]!.n);
    await waitUntil(async () => (await held()) === 500, 'the first batch is written');
    assert.equal((await call(t.app, 'POST', `${BASE}${job.id}/start/`, { token: tenant.token })).status, 200);
    body.end(lines(601, 1200));
    const res = await answer;
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(res.json(), { code: 'migration_job_not_open', received: 500, total_records: 500,
      detail: `Migration job "${job.id}" is queued: records can only be added while it is open. It changed during this upload: `
        + 'the 500 records written before are kept; the job holds 500.' });
    assert.equal(await held(), 500);
  });

  test('records and staged data are compressed with lz4 where the server has it (the embedded store keeps pglz)', async () => {
    const { rows } = await sql<{ column: string; method: string }>`SELECT attrelid::regclass || '.' || attname AS column, attcompression AS method
      FROM pg_attribute WHERE (attrelid, attname) IN (('migration_job_records'::regclass, 'record'), ('account_imports'::regclass, 'data'))
      ORDER BY 1`.execute(t.store.db);
    const lz4 = t.store.kind === 'postgres';
    assert.deepEqual(rows, [
      { column: 'account_imports.data', method: lz4 ? 'l' : '' },
      { column: 'migration_job_records.record', method: lz4 ? 'l' : '' },
    ]);
  });

  test('415 for another content type, 404 for an unknown or foreign job, 400 once the job is not open', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const job = await newJob(tenant);
    const json = await t.app.inject({ method: 'POST', url: `${BASE}${job.id}/records/`, payload: { account: {} }, headers: { authorization: `Token ${tenant.token}` } });
    assert.equal(json.statusCode, 415);
    assert.deepEqual(json.json(), { detail: 'Upload records as application/x-ndjson, one record per line.', code: 'unsupported_media_type' });
    // Types no parser reads, and none at all, get the same advice (not the JSON routes').
    for (const type of ['text/plain', 'application/ndjson', 'multipart/form-data; boundary=x', undefined]) {
      const res = await t.app.inject({ method: 'POST', url: `${BASE}${job.id}/records/`, payload: '{}\n',
        headers: { authorization: `Token ${tenant.token}`, ...(type ? { 'content-type': type } : {}) } });
      assert.deepEqual([res.statusCode, res.json()], [415, { detail: 'Upload records as application/x-ndjson, one record per line.', code: 'unsupported_media_type' }], type);
    }
    const notFound = { detail: `No migration job "${job.id}".`, code: 'not_found' };
    assert.deepEqual(await upload(other, job.id, [{ account: accountPayload(other.supplier) }]), { status: 404, json: notFound });
    assert.deepEqual(await upload(tenant, 'nope', ['{}']), { status: 404, json: { detail: 'No migration job "nope".', code: 'not_found' } });
    await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }]);
    assert.equal((await action(tenant, job.id, 'cancel')).status, 200);
    assert.deepEqual(await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }]), {
      status: 400, json: { detail: `Migration job "${job.id}" is cancelled: records can only be added while it is open.`, code: 'migration_job_not_open' },
    });
  });
});

describe('running a job', () => {
  test('a mixed job reports each record precisely: good records, each failing step, unparsable lines', async () => {
    const tenant = await createTenant(t);
    const vendorCode = await createVendor();
    vendor.set('PI-GOOD', 'found');
    const good = accountPayload(tenant.supplier);
    const badPhone = accountPayload(tenant.supplier);
    badPhone.customers[0]!.mobile = '12';
    const badStatement = accountPayload(tenant.supplier);
    const badTransaction = accountPayload(tenant.supplier);
    const badNote = accountPayload(tenant.supplier);
    const badInstruction = accountPayload(tenant.supplier);
    const skipped = accountPayload(tenant.supplier);
    const job = await newJob(tenant);
    await upload(tenant, job.id, [
      { account: good, statements: [statement('S-1', '2024-01-01', '2024-01-31')], transactions: [charge('T-1'), charge('T-2')],
        notes: [{ body: 'Moved over' }], payment_instruction: { vendor: vendorCode, reference: 'PI-GOOD', type: 'CARD' } },
      { account: badPhone },
      { account: badStatement, statements: [statement('S-1', '2024-01-01', '2024-01-31'), statement('S-2', '2024-01-15', '2024-02-15')] },
      { account: badTransaction, transactions: [charge('T-1'), charge('T-2', { amount: 'lots' })] },
      { account: badNote, notes: [{ body: 'ok' }, { is_pinned: true }] },
      { account: badInstruction, payment_instruction: { vendor: 'NO-SUCH-VENDOR', reference: 'R', type: 'CARD' } },
      '{"account": ',
      { account: skipped },
    ]);
    // Staged and marked to skip before the job runs: that record is skipped.
    await call(t.app, 'POST', '/v1/data-import/account-import-process/create-or-update/', { token: tenant.token, body: skipped });
    await admin.skipAccount(db, tenant.supplier, skipped.external_account_number);
    assert.equal((await action(tenant, job.id, 'start')).json.state, 'queued');
    const done = await finished(tenant, job.id);
    assert.deepEqual(done.counts, { total: 8, pending: 0, running: 0, succeeded: 1, skipped: 1, failed: 6, cancelled: 0 });
    assert.match(done.started_at, UTC);
    assert.match(done.finished_at, UTC);
    assert.equal(done.eta_seconds, null);

    const lines = await resultsOf(tenant, job.id);
    const view = lines.map((l) => [l.line, l.outcome, l.step, l.created, l.errors.map((e: any) => [e.code, e.attr])]);
    assert.deepEqual(view, [
      [1, 'succeeded', null, true, []],
      [2, 'failed', 'account', null, [['invalid_phone_number', 'account.customers.0.mobile']]],
      [3, 'failed', 'statements', true, [['statement_period_overlap', 'statements.1.bill_period_from_date']]],
      [4, 'failed', 'transactions', true, [['invalid', 'transactions.1.amount']]],
      [5, 'failed', 'notes', true, [['required', 'notes.1']]],
      [6, 'failed', 'payment_instruction', true, [['payment_vendor_not_found', 'payment_instruction.vendor']]],
      [7, 'failed', 'parse', null, [['parse_error', 'non_field_errors']]],
      [8, 'skipped', null, null, []],
    ]);
    assert.match(lines[0].service_account_number, /^A-/);
    assert.equal(await rowsOf('statements', lines[0].service_account_number), 1);
    assert.equal(await rowsOf('transactions', lines[0].service_account_number), 2);
    assert.equal(await rowsOf('notes', lines[0].service_account_number), good.notes!.length + 1, 'the account\'s own notes and the record\'s');
    assert.equal(await rowsOf('payment_instructions', lines[0].service_account_number), 1);
    assert.deepEqual(done.errors_by_code, ['invalid', 'invalid_phone_number', 'parse_error', 'payment_vendor_not_found', 'required',
      'statement_period_overlap'].map((code) => ({ code, count: 1 })), 'the first error of each failed record, largest first, then by code');
    assert.deepEqual(await jobEvents(job.id), [{ type: 'migration_job.completed', external_account_number: null, data: { job_id: job.id, counts: done.counts } }]);

    const failedOnly = await resultsOf(tenant, job.id, '?outcome=failed');
    assert.deepEqual(failedOnly.map((l) => l.line), [2, 3, 4, 5, 6, 7]);
    const csv = await results(tenant, job.id, '?outcome=skipped', 'text/csv');
    assert.match(String(csv.type), /^text\/csv/);
    assert.equal(csv.body, `line,external_account_number,outcome,step,service_account_number,error_code,error_attr,error_detail,error_count,warning_count,first_warning_code\r\n8,${skipped.external_account_number},skipped,,,,,,0,0,\r\n`);
    const ndjson = await results(tenant, job.id, '?outcome=skipped');
    assert.match(String(ndjson.type), /^application\/x-ndjson/);
  });

  test('CSV results: a text cell that a spreadsheet would run as a formula starts with a single quote', async () => {
    const tenant = await createTenant(t);
    const id = unique('x');
    const numbers = [`=HYPERLINK("http://evil.example/${id}","a,b")`, `+${id}`, `-${id}`, `@SUM(${id})`, `plain-${id}`];
    const job = await newJob(tenant);
    await upload(tenant, job.id, numbers.map((number) => {
      const account = accountPayload(tenant.supplier, { external_account_number: number });
      account.customers[0]!.mobile = '12';
      return { account };
    }));
    await action(tenant, job.id, 'start');
    await finished(tenant, job.id);
    const csv = await results(tenant, job.id, '', 'text/csv');
    const rows = csv.body.split('\r\n').slice(1, -1).map((row) => row.replace(/,invalid_phone_number,.*$/, ''));
    assert.deepEqual(rows, [
      `1,"'=HYPERLINK(""http://evil.example/${id}"",""a,b"")",failed,account,`,
      `2,'+${id},failed,account,`, `3,'-${id},failed,account,`, `4,'@SUM(${id}),failed,account,`, `5,plain-${id},failed,account,`,
    ]);
    assert.deepEqual((await resultsOf(tenant, job.id)).map((r) => r.external_account_number), numbers, 'NDJSON carries the values as they are');
  });

  test('the same file twice: the second job changes nothing and reports created: false', async () => {
    const tenant = await createTenant(t);
    const account = accountPayload(tenant.supplier);
    const lines = [{ account, statements: [statement('S-9', '2024-01-01', '2024-01-31')], transactions: [charge('T-9')], notes: [{ body: 'hello' }] }];
    const first = await newJob(tenant);
    await upload(tenant, first.id, lines);
    await action(tenant, first.id, 'start');
    await finished(tenant, first.id);
    const [one] = await resultsOf(tenant, first.id);
    const before = [];
    for (const table of ['statements', 'transactions', 'notes'] as const) before.push(await rowsOf(table, one.service_account_number));
    const second = await newJob(tenant);
    await upload(tenant, second.id, lines);
    await action(tenant, second.id, 'start');
    const done = await finished(tenant, second.id);
    assert.deepEqual(done.counts, { ...ZERO, total: 1, succeeded: 1 });
    const [two] = await resultsOf(tenant, second.id);
    assert.deepEqual([one.created, two.created, two.service_account_number], [true, false, one.service_account_number]);
    const afterwards = [];
    for (const table of ['statements', 'transactions', 'notes'] as const) afterwards.push(await rowsOf(table, one.service_account_number));
    assert.deepEqual(afterwards, before);
    assert.deepEqual(before.slice(0, 2), [1, 1]);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts WHERE external_account_number = ${account.external_account_number}`.execute(db);
    assert.equal(rows[0]!.n, 1);
  });

  test('a dry-run job creates nothing and imports nothing else', async () => {
    const tenant = await createTenant(t);
    const account = accountPayload(tenant.supplier);
    const job = await newJob(tenant, { dry_run: true });
    await upload(tenant, job.id, [{ account, notes: [{ body: 'x' }] }]);
    await action(tenant, job.id, 'start');
    const done = await finished(tenant, job.id);
    assert.equal(done.dry_run, true);
    const [line] = await resultsOf(tenant, job.id);
    assert.deepEqual([line.outcome, line.created, line.service_account_number, line.dry_run], ['succeeded', false, null, true]);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts WHERE external_account_number = ${account.external_account_number}`.execute(db);
    assert.equal(rows[0]!.n, 0);
  });

  test('a payment instruction reference that would change the vendor path fails at its step; the secret never leaves', async () => {
    const tenant = await createTenant(t);
    const secret = unique('sk_job');
    const vendorCode = await createVendor(secret);
    const references = ['..', '.', '%2e%2e', 'a/b', 'a%2fb', '?x', '#x', 'a\\b'];
    for (const reference of references) vendor.set(reference, 'found');
    const job = await newJob(tenant);
    await upload(tenant, job.id, references.map((reference) =>
      ({ account: accountPayload(tenant.supplier), payment_instruction: { vendor: vendorCode, reference, type: 'CARD' } })));
    await action(tenant, job.id, 'start');
    const done = await finished(tenant, job.id);
    assert.deepEqual(done.counts, { ...ZERO, total: references.length, failed: references.length });
    const lines = await resultsOf(tenant, job.id);
    for (const line of lines) {
      assert.deepEqual([line.outcome, line.step, line.errors], ['failed', 'payment_instruction',
        [{ code: 'invalid', attr: 'payment_instruction.reference', detail: 'This value has an invalid format.' }]]);
      assert.equal(await rowsOf('payment_instructions', line.service_account_number), 0);
    }
    assert.deepEqual(vendor.requests.filter((r) => r.authorization === `Bearer ${secret}`), []);
  });

  test('a record\'s payment instruction naming an account or a supplier is refused at those fields; no other account gets it', async () => {
    const tenant = await createTenant(t);
    const vendorCode = await createVendor();
    const reference = unique('PI');
    vendor.set(reference, 'found');
    const [victim, own] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
    const job = await newJob(tenant);
    await upload(tenant, job.id, [
      { account: victim },
      { account: own, payment_instruction: { vendor: vendorCode, reference, type: 'CARD', external_account_number: victim.external_account_number, import_supplier: tenant.supplier } },
    ]);
    await action(tenant, job.id, 'start');
    assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 2, succeeded: 1, failed: 1 });
    const [first, second] = await resultsOf(tenant, job.id);
    const unknown = (attr: string) => ({ code: 'unknown_field', attr, detail: 'This field is not part of the documented payload and must not be sent.' });
    assert.deepEqual([second.outcome, second.step, second.errors], ['failed', 'payment_instruction',
      [unknown('payment_instruction.import_supplier'), unknown('payment_instruction.external_account_number')]]);
    assert.equal(await rowsOf('payment_instructions', first.service_account_number), 0);
    assert.equal(await rowsOf('payment_instructions', second.service_account_number), 0);
  });

  test('history sent again with other content fails the record at that step with conflict items', async () => {
    const tenant = await createTenant(t);
    const vendorCode = await createVendor();
    const reference = unique('PI');
    vendor.set(reference, 'found');
    const [a, b, c] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
    const s1 = statement('S-1', '2024-01-01', '2024-01-31');
    const first = [
      { account: a, transactions: [charge('SAME-1', { amount: 10 })] },
      { account: b, statements: [s1] },
      { account: c, payment_instruction: { vendor: vendorCode, reference, type: 'CARD' } },
    ];
    const second = [
      { account: a, transactions: [charge('NEW-1'), charge('SAME-1', { amount: 25.5 })] },
      { account: b, statements: [{ ...s1, gross_amount: 99 }] },
      { account: c, payment_instruction: { vendor: vendorCode, reference, type: 'BANK_TRANSFER' } },
    ];
    for (const [records, outcome] of [[first, 'succeeded'], [first, 'succeeded'], [second, 'failed']] as const) {
      const job = await newJob(tenant);
      await upload(tenant, job.id, [...records]);
      await action(tenant, job.id, 'start');
      await finished(tenant, job.id);
      const lines = await resultsOf(tenant, job.id);
      assert.deepEqual(lines.map((l) => l.outcome), [outcome, outcome, outcome], JSON.stringify(lines));
      if (outcome === 'failed') {
        assert.deepEqual(lines.map((l) => [l.step, l.errors]), [
          ['transactions', [{ code: 'conflict', attr: 'transactions.1.amount', detail: 'Transaction "SAME-1" exists with amount 10.00; this request sends 25.50.' }]],
          ['statements', [{ code: 'conflict', attr: 'statements.0.gross_amount', detail: 'Statement "S-1" exists with gross_amount 120.50; this request sends 99.00.' }]],
          ['payment_instruction', [{ code: 'conflict', attr: 'payment_instruction.type', detail: `Payment instruction "${reference}" exists with type CARD; this request sends BANK_TRANSFER.` }]],
        ]);
        assert.equal(await rowsOf('transactions', lines[0].service_account_number), 1, 'NEW-1 is not stored: the batch is refused whole');
      }
    }
  });

  for (const [code, detail] of [
    ['40001', 'The database rolled this back because it conflicted with other work; nothing of it was written. Retry it.'],
    ['57014', 'The database stopped this at its time limit (it is busy, or this asked for a lot at once). Retry it later.'],
  ] as const) test(`a step the database rolls back on every try (${code}) is retried, then fails with service_unavailable at that step`, async () => {
    const tenant = await createTenant(t);
    const body = unique('ROLLED-BACK');
    const planted = await plantConflictAt(t.store.db, { table: 'notes', event: 'INSERT', when: `NEW.body = '${body}'`, times: 1_000 }, code);
    try {
      const job = await newJob(tenant);
      await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier), notes: [{ body }] }]);
      await action(tenant, job.id, 'start');
      assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 1, failed: 1 });
      const [line] = await resultsOf(tenant, job.id);
      assert.deepEqual([line.outcome, line.step, line.created, line.errors], ['failed', 'notes', true, [
        { code: 'service_unavailable', attr: 'notes', detail },
      ]]);
      const kept = await sql<{ n: number }>`SELECT count(*)::int AS n FROM notes WHERE body = ${body}`.execute(t.store.db);
      assert.equal(kept.rows[0]!.n, 0, 'the rolled-back note is not stored');
      // One try and JOB_RETRY_LIMIT=2 retries.
      const { rows } = await sql<{ attempts: number }>`SELECT attempts FROM migration_job_records WHERE job_id = ${job.id}::uuid`.execute(t.store.db);
      assert.deepEqual(rows, [{ attempts: 3 }]);
    } finally {
      await planted.remove();
    }
  });

  test('a record\'s account is made from the data the record staged, or not at all: another writer\'s stage before its create fails it with account_staged_data_changed', async () => {
    const tenant = await createTenant(t);
    const account = accountPayload(tenant.supplier);
    const ext = account.external_account_number;
    // Staged before (by the REST endpoint), so the record stages over it, then creates, one step at a
    // time. A trigger plays another writer: the record's stage stores another locality, as a stage
    // by another request landing between the record's two steps would leave it.
    assert.equal((await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: account })).status, 201);
    const otherWriter = await plantTrigger(db, { table: 'account_imports', event: 'UPDATE', when: `NEW.external_account_number = '${ext}'` },
      () => `NEW.data = jsonb_set(NEW.data, '{billing_address,locality}', '"Bath"'); RETURN NEW;`);
    try {
      const job = await newJob(tenant);
      await upload(tenant, job.id, [{ account }]);
      await action(tenant, job.id, 'start');
      assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 1, failed: 1 });
      const [line] = await resultsOf(tenant, job.id);
      assert.deepEqual([line.outcome, line.step, line.created, line.errors.map((e: { code: string; attr: string }) => [e.code, e.attr])],
        ['failed', 'account', null, [['account_staged_data_changed', 'account']]]);
      assert.deepEqual(await db.selectFrom('accounts').select('number').where('external_account_number', '=', ext).execute(), [], 'nothing created');
    } finally {
      await otherWriter.remove();
    }
  });

  test('a record whose queue job fails on every try, outside the pipeline, is given up: failed as service_unavailable, not left running', async () => {
    const tenant = await createTenant(t);
    const account = accountPayload(tenant.supplier);
    // Its claim is refused by the store on the one try and the JOB_RETRY_LIMIT=2 retries; the give-up's own claim then succeeds.
    const planted = await plantConflictAt(t.store.db, { table: 'migration_job_records', event: 'UPDATE',
      when: `NEW.outcome = 'running' AND NEW.external_account_number = '${account.external_account_number}'`, times: 3 }, '40001');
    try {
      const job = await newJob(tenant);
      await upload(tenant, job.id, [{ account }]);
      await action(tenant, job.id, 'start');
      assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 1, failed: 1 });
      const [line] = await resultsOf(tenant, job.id);
      assert.deepEqual([line.outcome, line.step, line.created, line.errors], ['failed', 'account', null, [
        { code: 'service_unavailable', attr: 'non_field_errors', detail: 'The record could not be run after 3 tries (a worker stopped or the store was unavailable).' },
      ]]);
    } finally {
      await planted.remove();
    }
  });

  test('a transient failure is retried, then fails with its code', async () => {
    const tenant = await createTenant(t);
    const vendorCode = await createVendor();
    const reference = unique('PI');
    vendor.set(reference, 'error');
    const job = await newJob(tenant);
    await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier), payment_instruction: { vendor: vendorCode, reference, type: 'CARD' } }]);
    await action(tenant, job.id, 'start');
    await finished(tenant, job.id);
    const [line] = await resultsOf(tenant, job.id);
    assert.deepEqual([line.outcome, line.step, line.created, line.errors[0].code, line.errors[0].attr], ['failed', 'payment_instruction', true, 'payment_vendor_unavailable', 'payment_instruction']);
    // One try and JOB_RETRY_LIMIT=2 retries of the record, each a call of the endpoint's service,
    // which itself asks the vendor 3 times (its own bounded retry, vendors/retry.ts).
    assert.equal(vendor.hits(reference), 3 * 3);
  });
});

describe('a record\'s supplier, team and tries, on both paths', () => {
  for (const { path, app } of PATHS) {
    const chunked = app === chunks;

    test(`a record whose account.import_supplier is not the job's supplier fails at step account as invalid; the others succeed (${path})`, async () => {
      const tenant = await createTenant(app);
      const other = await createTenant(app);
      // Another organisation's supplier, and a code no supplier has.
      const foreign = accountPayload(other.supplier);
      const madeUp = accountPayload(tenant.supplier, { import_supplier: unique('NO-SUCH-SUP') });
      const records = [accountPayload(tenant.supplier), foreign, accountPayload(tenant.supplier), madeUp, accountPayload(tenant.supplier)];
      const { id, lines } = await runJobToEnd(app, tenant, records.map((account) => ({ account })));
      const notTheJobs = [{ code: 'invalid', attr: 'account.import_supplier', detail: `The record's supplier must be the job's supplier, "${tenant.supplier}".` }];
      assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.step, l.created, l.errors]), [
        [1, 'succeeded', null, true, []], [2, 'failed', 'account', null, notTheJobs], [3, 'succeeded', null, true, []],
        [4, 'failed', 'account', null, notTheJobs], [5, 'succeeded', null, true, []],
      ]);
      // In a chunk, the good records were written as its set and only the refused two were handed back.
      assert.deepEqual(await recordQueueJobs(app, id), chunked ? [[1, 2, 3, 4, 5], [2], [4]] : [[1], [2], [3], [4], [5]]);
      // Nothing was staged or created for the refused records, under any supplier.
      const { rows } = await sql<{ n: number }>`SELECT
          (SELECT count(*) FROM account_imports WHERE external_account_number IN (${foreign.external_account_number}, ${madeUp.external_account_number}))
          + (SELECT count(*) FROM accounts a JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${other.supplier}) AS n`.execute(app.store.db);
      assert.equal(Number(rows[0]!.n), 0);
    });

    test(`a record whose account.import_supplier is missing or not text fails at step account with all its endpoint's errors (${path})`, async () => {
      const tenant = await createTenant(app);
      const missing = accountPayload(tenant.supplier) as Record<string, unknown> & { customers: Array<{ mobile?: string }> };
      delete missing.import_supplier;
      missing.customers[0]!.mobile = '12';
      const numeric = { ...accountPayload(tenant.supplier), import_supplier: 5 };
      const { lines } = await runJobToEnd(app, tenant, [{ account: accountPayload(tenant.supplier) }, { account: missing }, { account: numeric }]);
      const endpoint = async (account: object) => {
        const res = await call(app.app, 'POST', '/v1/data-import/validate-account/', { token: tenant.token, body: account });
        assert.equal(res.status, 400, res.body);
        return (res.json.errors as Array<{ code: string; attr: string; detail: string }>).map((e) => ({ ...e, attr: `account.${e.attr}` }));
      };
      assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.step, l.errors]), [
        [1, 'succeeded', null, []],
        [2, 'failed', 'account', await endpoint(missing)],
        [3, 'failed', 'account', await endpoint(numeric)],
      ]);
      assert.deepEqual(lines[1]!.errors.map((e: { attr: string }) => e.attr).sort(), ['account.customers.0.mobile', 'account.import_supplier']);
    });

    test(`the accounts a job creates belong to the job's operations team (${path})`, async () => {
      const tenant = await createTenant(app);
      // A team of the job's own, not the tenant's usual one.
      const { operations_team: team } = await admin.createTeam(app.store.db, unique('job-team'));
      const teamId = Number((await admin.findTeamByName(app.store.db, team))!.id);
      const { id, lines } = await runJobToEnd(app, { ...tenant, team }, Array.from({ length: 4 }, () => ({ account: accountPayload(tenant.supplier) })));
      assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.created]), [1, 2, 3, 4].map((line) => [line, 'succeeded', true]));
      assert.deepEqual(await recordQueueJobs(app, id), chunked ? [[1, 2, 3, 4]] : [[1], [2], [3], [4]]);
      const { rows } = await sql<{ line: number; team: number }>`SELECT r.line, a.operations_team_id::int AS team
        FROM migration_job_records r JOIN accounts a ON a.number = r.service_account_number
        WHERE r.job_id = ${id}::uuid ORDER BY r.line`.execute(app.store.db);
      assert.deepEqual(rows, [1, 2, 3, 4].map((line) => ({ line, team: teamId })));
      const { rows: all } = await sql<{ team: number; n: number }>`SELECT a.operations_team_id::int AS team, count(*)::int AS n
        FROM accounts a JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${tenant.supplier} GROUP BY 1`.execute(app.store.db);
      assert.deepEqual(all, [{ team: teamId, n: 4 }], 'every account of the supplier is on the job\'s team');
    });

    test(`a failure that is not transient fails at once: a record failing validation is tried once (${path})`, async () => {
      const tenant = await createTenant(app);
      const badPhone = accountPayload(tenant.supplier);
      badPhone.customers[0]!.mobile = '12';
      const { id, lines } = await runJobToEnd(app, tenant, [{ account: accountPayload(tenant.supplier) }, { account: badPhone }]);
      assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.step, l.errors.map((e) => [e.code, e.attr])]), [
        [1, 'succeeded', null, []], [2, 'failed', 'account', [['invalid_phone_number', 'account.customers.0.mobile']]],
      ]);
      // One claim each (a chunk's hand-back does not count its try), and the failed record's queue job was never retried.
      assert.deepEqual(await attemptsOf(app, id), [{ line: 1, attempts: 1 }, { line: 2, attempts: 1 }]);
      assert.deepEqual(await recordQueueJobs(app, id), chunked ? [[1, 2], [2]] : [[1], [2]]);
      const { rows } = await sql<{ state: string; retry_count: number }>`SELECT state, retry_count FROM pgboss.job
        WHERE name = 'migration_record' AND data->>'job_id' = ${id} AND data->'lines' = '[2]'::jsonb`.execute(app.store.db);
      assert.deepEqual(rows, [{ state: 'completed', retry_count: 0 }]);
    });
  }
});

describe('job states', () => {
  test('start: empty is migration_job_empty; started twice is migration_job_not_open', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    assert.deepEqual((await action(tenant, job.id, 'start')).json, { detail: `Migration job "${job.id}" has no records: upload some before starting it.`, code: 'migration_job_empty' });
    await upload(tenant, job.id, ['not json']);
    assert.equal((await action(tenant, job.id, 'start')).status, 200);
    await finished(tenant, job.id);
    const again = await action(tenant, job.id, 'start');
    assert.deepEqual([again.status, again.json], [400, { detail: `Migration job "${job.id}" is completed: only an open job can be started (it starts once).`, code: 'migration_job_not_open' }]);
  });

  test('start with the JSON body {} answers as start with none: 200, the job queued', async () => {
    const tenant = await createTenant(t);
    const bare = await newJob(tenant);
    const braced = await newJob(tenant);
    for (const job of [bare, braced]) await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }]);
    const none = await action(tenant, bare.id, 'start');
    const empty = await call(t.app, 'POST', `${BASE}${braced.id}/start/`, { token: tenant.token, body: '{}', headers: { 'content-type': 'application/json' } });
    const shown = (res: { status: number; json: any }) => [res.status, { ...res.json, id: 'ID', created_at: 'AT', started_at: res.json.started_at && 'AT' }];
    assert.deepEqual(shown(empty), [200, {
      id: 'ID', import_supplier: tenant.supplier, operations_team_name: tenant.team, dry_run: false, on_drift: 'warn', state: 'queued', paused: false,
      max_records_per_minute: null, not_before: null, not_after: null, created_at: 'AT', started_at: 'AT', finished_at: null,
      counts: { ...ZERO, total: 1, pending: 1 }, records_with_warnings: 0, errors_by_code: [], records_per_minute: 0, eta_seconds: null,
    }]);
    assert.deepEqual(shown(none), shown(empty));
    for (const job of [bare, braced]) assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 1, succeeded: 1 });
  });

  test('not_before ahead: scheduled; not_after passed: records not started are cancelled with migration_window_closed', async () => {
    const tenant = await createTenant(t);
    const later = await newJob(tenant, { not_before: '2099-01-01T00:00:00Z' });
    await upload(tenant, later.id, [{ account: accountPayload(tenant.supplier) }]);
    const started = await action(tenant, later.id, 'start');
    assert.deepEqual([started.json.state, started.json.not_before, started.json.counts.pending], ['scheduled', '2099-01-01T00:00:00Z', 1]);

    const closing = await newJob(tenant, { not_after: new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, 'Z') });
    await upload(tenant, closing.id, [{ account: accountPayload(tenant.supplier) }]);
    // The window closes: set on the job's row instead of waiting for the clock to pass it.
    await sql`UPDATE migration_jobs SET not_after = now() - interval '1 second' WHERE id = ${closing.id}::uuid`.execute(db);
    await action(tenant, closing.id, 'start');
    const done = await finished(tenant, closing.id);
    assert.deepEqual(done.counts, { ...ZERO, total: 1, cancelled: 1 });
    const [line] = await resultsOf(tenant, closing.id);
    assert.deepEqual([line.outcome, line.errors], ['cancelled', [{ code: 'migration_window_closed', attr: 'non_field_errors', detail: 'The job\'s not_after passed before this record started.' }]]);
    // A retry would only cancel them again: refused, and the job stays as it ended.
    const until = (await sql<{ until: Date }>`SELECT not_after AS until FROM migration_jobs WHERE id = ${closing.id}::uuid`.execute(db)).rows[0]!.until;
    const retried = await action(tenant, closing.id, 'retry');
    assert.deepEqual([retried.status, retried.json], [400, { code: 'migration_job_window_closed', detail: `Migration job "${closing.id}" may run until `
      + `${until.toISOString().replace(/\.\d+Z$/, 'Z')} (not_after), which has passed: a retry would cancel its records again. Run them in a new job.` }]);
    assert.equal((await getJob(tenant, closing.id)).state, done.state);
  });

  test('cancel, then retry: cancelled records run again; errors of a finished or running job', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant, { not_before: '2099-01-01T00:00:00Z' });
    await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }, { account: accountPayload(tenant.supplier) }]);
    await action(tenant, job.id, 'start');
    const retryEarly = await action(tenant, job.id, 'retry');
    assert.deepEqual([retryEarly.status, retryEarly.json], [400, { detail: `Migration job "${job.id}" is scheduled: only a completed or cancelled job can be retried.`, code: 'migration_job_not_finished' }]);
    const cancelled = await action(tenant, job.id, 'cancel');
    assert.deepEqual([cancelled.json.state, cancelled.json.counts], ['cancelled', { ...ZERO, total: 2, cancelled: 2 }]);
    assert.deepEqual(await jobEvents(job.id), [{ type: 'migration_job.cancelled', external_account_number: null, data: { job_id: job.id, counts: cancelled.json.counts } }]);
    const again = await action(tenant, job.id, 'cancel');
    assert.deepEqual([again.status, again.json], [400, { detail: `Migration job "${job.id}" is already cancelled.`, code: 'migration_job_finished' }]);
    const retried = await action(tenant, job.id, 'retry');
    assert.deepEqual([retried.json.state, retried.json.counts], ['queued', { ...ZERO, total: 2, pending: 2 }]);
    const done = await finished(tenant, job.id);
    assert.deepEqual(done.counts, { ...ZERO, total: 2, succeeded: 2 });
  });

  test('a paused supplier pauses its job; it goes on when the supplier is ongoing again', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }]);
    await admin.setSupplier(db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    assert.equal((await action(tenant, job.id, 'start')).json.state, 'paused');
    await twoLooks(t, job.id);
    assert.deepEqual((await getJob(tenant, job.id)).counts, { ...ZERO, total: 1, pending: 1 });
    await admin.setSupplier(db, tenant.supplier, { status: 'ongoing' });
    await t.directory.sync();
    assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 1, succeeded: 1 });
  });

  test('a paused supplier may still have jobs created and records uploaded; started, the job is paused and its records wait unclaimed', async () => {
    const tenant = await createTenant(t);
    await admin.setSupplier(db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    assert.deepEqual([created.status, created.json.state, created.json.paused, created.json.counts], [201, 'open', false, ZERO]);
    const id = created.json.id as string;
    assert.deepEqual(await upload(tenant, id, [{ account: accountPayload(tenant.supplier) }, { account: accountPayload(tenant.supplier) }]),
      { status: 200, json: { received: 2, total_records: 2 } });
    const started = await action(tenant, id, 'start');
    // Shown paused (the supplier's pause, not the job's own): its records are pending and no worker claims them.
    assert.deepEqual([started.status, started.json.state, started.json.paused, started.json.counts], [200, 'paused', false, { ...ZERO, total: 2, pending: 2 }]);
    await twoLooks(t, id);
    const waiting = await getJob(tenant, id);
    assert.deepEqual([waiting.state, waiting.counts, waiting.started_at !== null], ['paused', { ...ZERO, total: 2, pending: 2 }, true]);
    const { rows } = await sql<{ line: number; outcome: string; attempts: number }>`SELECT line, outcome, attempts FROM migration_job_records
      WHERE job_id = ${id}::uuid ORDER BY line`.execute(db);
    assert.deepEqual(rows, [{ line: 1, outcome: 'pending', attempts: 0 }, { line: 2, outcome: 'pending', attempts: 0 }]);
    await admin.setSupplier(db, tenant.supplier, { status: 'ongoing' });
    await t.directory.sync();
    assert.deepEqual((await finished(tenant, id)).counts, { ...ZERO, total: 2, succeeded: 2 });
  });
});

describe('rate and ETA', () => {
  test('records_per_minute of a young job is taken over the time since it began, not over five minutes', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    await upload(tenant, job.id, Array.from({ length: 4 }, () => ({ account: accountPayload(tenant.supplier) })));
    const began = Date.now();
    await action(tenant, job.id, 'start');
    const done = await finished(tenant, job.id);
    // Four records in well under five minutes: at least 4 a minute over however long it took (the
    // five-minute rate would be 0.8).
    const minutes = Math.max(0.5, (Date.now() - began) / 60_000);
    assert.ok(done.records_per_minute >= Math.floor((4 / minutes) * 10) / 10, `records_per_minute ${done.records_per_minute} after ${minutes} min`);
    assert.ok(done.records_per_minute <= 8, `records_per_minute ${done.records_per_minute}: four records over at least half a minute`);
  });
});

describe('the dispatch window', () => {
  test('a job keeps at most JOB_DISPATCH_WINDOW records on the queue, and sends the rest as those finish', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    await upload(tenant, job.id, Array.from({ length: 8 }, () => ({ account: accountPayload(tenant.supplier) })));
    // Paused, the sent records wait on the queue and none finishes: the window stays full.
    await admin.setSupplier(db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    assert.equal((await action(tenant, job.id, 'start')).json.state, 'paused');
    const sent = async () => {
      const { rows } = await sql<{ enqueued: boolean; n: number }>`SELECT enqueued, count(*)::int AS n FROM migration_job_records
        WHERE job_id = ${job.id}::uuid GROUP BY enqueued ORDER BY enqueued`.execute(db);
      return rows.map((r) => [r.enqueued, r.n]);
    };
    await waitUntil(async () => JSON.stringify(await sent()) === JSON.stringify([[false, 5], [true, WINDOW]]), 'the first window sent');
    await twoLooks(t, job.id);
    assert.deepEqual(await sent(), [[false, 5], [true, WINDOW]]);
    // A queue job holds a chunk of lines: the lines over all of them are the window.
    const { rows: queued } = await sql<{ n: number }>`SELECT count(DISTINCT l.line)::int AS n
      FROM pgboss.job, jsonb_array_elements_text(data->'lines') AS l(line)
      WHERE name = 'migration_record' AND data->>'job_id' = ${job.id} AND state < 'completed'`.execute(db);
    assert.equal(queued[0]!.n, WINDOW);
    await admin.setSupplier(db, tenant.supplier, { status: 'ongoing' });
    await t.directory.sync();
    assert.deepEqual((await finished(tenant, job.id)).counts, { ...ZERO, total: 8, succeeded: 8 });
    assert.deepEqual(await sent(), [[true, 8]]);
  });
});

describe('the end of a job', () => {
  // A record's outcome says in the same statement whether it saw others pending; one that did does
  // not look for the job's end. Those others can be cancelled, or finish beside it, unseen by it.
  // The dispatcher then keeps looking until the job has ended.
  test('a job whose last record finished after the dispatcher last looked, with no record looking after it, is still ended', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }, { account: accountPayload(tenant.supplier) }]);
    // As a worker leaves it: line 1 finished, line 2 running on the worker (neither on the queue
    // here), and the job running; then the dispatcher looks, with nothing left to send.
    await sql`UPDATE migration_job_records SET enqueued = true, outcome = CASE WHEN line = 1 THEN 'succeeded' ELSE 'running' END,
      finished_at = CASE WHEN line = 1 THEN now() END WHERE job_id = ${job.id}::uuid`.execute(db);
    await sql`UPDATE migration_jobs SET state = 'running', started_at = now() WHERE id = ${job.id}::uuid`.execute(db);
    const look = await t.queue.send(DISPATCH_QUEUE, { job_id: job.id });
    // That look has run (its queue job completed) and left the job running: line 2 is still running.
    await waitUntil(async () => {
      const { rows } = await sql<{ state: string }>`SELECT state FROM pgboss.job WHERE id = ${look}::uuid`.execute(db);
      return rows[0]?.state === 'completed';
    }, 'the dispatcher looked');
    assert.equal((await getJob(tenant, job.id)).state, 'running');
    // Line 2 finishes having seen line 1 pending (an outcome that looks for nothing more).
    await sql`UPDATE migration_job_records SET outcome = 'succeeded', finished_at = now() WHERE job_id = ${job.id}::uuid AND line = 2`.execute(db);
    const ended = await finished(tenant, job.id, 'completed', 10_000);
    assert.deepEqual(ended.counts, { ...ZERO, total: 2, succeeded: 2 });
  });

  // A job that has ended shows the figures kept when it ended, so a list of big finished jobs does
  // not count their records on every refresh; a retry counts them again.
  test('an ended job shows the figures kept at its end, in its view and the list; a retry counts its records again', async () => {
    const tenant = await createTenant(t);
    const badPhone = accountPayload(tenant.supplier);
    badPhone.customers[0]!.mobile = '12';
    const job = await newJob(tenant);
    await upload(tenant, job.id, [{ account: accountPayload(tenant.supplier) }, { account: badPhone }]);
    await action(tenant, job.id, 'start');
    const ended = await finished(tenant, job.id);
    const figures = { counts: { ...ZERO, total: 2, succeeded: 1, failed: 1 }, errors_by_code: [{ code: 'invalid_phone_number', count: 1 }], records_with_warnings: 0 };
    assert.deepEqual({ counts: ended.counts, errors_by_code: ended.errors_by_code, records_with_warnings: ended.records_with_warnings }, figures);
    // Just ended, its records finished within the rate's window still give it a rate.
    assert.ok(ended.records_per_minute > 0, `records_per_minute ${ended.records_per_minute}`);
    // The records change behind the job's back (no endpoint can do this to an ended job): its view
    // and the list still show what it ended with.
    await sql`UPDATE migration_job_records SET outcome = 'succeeded', step = NULL, errors = '[]' WHERE job_id = ${job.id}::uuid AND outcome = 'failed'`.execute(db);
    const view = await getJob(tenant, job.id);
    assert.deepEqual({ counts: view.counts, errors_by_code: view.errors_by_code, records_with_warnings: view.records_with_warnings }, figures);
    const list = await call(t.app, 'GET', `${BASE}?import_supplier=${tenant.supplier}`, { token: tenant.token });
    assert.deepEqual(list.json.map((j: any) => [j.id, j.counts]), [[job.id, figures.counts]]);
    // A retry forgets them: the job runs again (nothing is left to retry) and ends with what its records hold now.
    assert.equal((await action(tenant, job.id, 'retry')).status, 200);
    const again = await finished(tenant, job.id);
    assert.deepEqual([again.counts, again.errors_by_code], [{ ...ZERO, total: 2, succeeded: 2 }, []]);
  });
});

describe('two jobs at once', () => {
  test('they take turns on the queue: a small job started after a big one finishes while most of the big one is still to run', async () => {
    const tenant = await createTenant(t);
    const big = await newJob(tenant);
    const small = await newJob(tenant);
    await upload(tenant, big.id, Array.from({ length: 12 }, () => ({ account: accountPayload(tenant.supplier) })));
    await upload(tenant, small.id, Array.from({ length: 3 }, () => ({ account: accountPayload(tenant.supplier) })));
    assert.equal((await action(tenant, big.id, 'start')).status, 200);
    assert.equal((await action(tenant, small.id, 'start')).status, 200);
    await finished(tenant, small.id);
    await finished(tenant, big.id);
    // With the whole of the big job on the queue first, the small job's records would run after all
    // twelve had started, so at most the few running beside them could finish later.
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM migration_job_records
      WHERE job_id = ${big.id}::uuid AND finished_at > (SELECT max(finished_at) FROM migration_job_records WHERE job_id = ${small.id}::uuid)`.execute(db);
    assert.ok(rows[0]!.n >= 5, `${rows[0]!.n} of the big job's 12 records finished after the small job's last`);
  });
});

describe('reading jobs', () => {
  test('another organisation\'s job is 404 not_found on every endpoint', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const job = await newJob(tenant);
    const notFound = { detail: `No migration job "${job.id}".`, code: 'not_found' };
    for (const [method, path] of [['GET', ''], ['GET', 'records/'], ['POST', 'start/'], ['POST', 'cancel/'], ['POST', 'retry/']] as const) {
      const res = await call(t.app, method, `${BASE}${job.id}/${path}`, { token: other.token });
      assert.deepEqual([res.status, res.json], [404, notFound], `${method} ${path}`);
    }
  });

  test('the list: the supplier\'s jobs newest first, paged with a Link header', async () => {
    const tenant = await createTenant(t);
    const ids = [];
    for (let i = 0; i < 3; i += 1) ids.push((await newJob(tenant)).id);
    const all = await call(t.app, 'GET', `${BASE}?import_supplier=${tenant.supplier}`, { token: tenant.token });
    assert.deepEqual(all.json.map((j: any) => j.id), [...ids].reverse());
    const first = await call(t.app, 'GET', `${BASE}?import_supplier=${tenant.supplier}&page_size=2`, { token: tenant.token });
    assert.deepEqual(first.json.map((j: any) => j.id), [ids[2], ids[1]]);
    const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))![1]!;
    const second = await call(t.app, 'GET', next, { token: tenant.token });
    assert.deepEqual(second.json.map((j: any) => j.id), [ids[0]]);
    assert.equal(second.headers.link, undefined);
    // A cursor it did not give: not base64 JSON, a key of the wrong types, of another length (the good key with a third value).
    const given = new URL(next, 'http://x').searchParams.get('cursor')!;
    const longer = Buffer.from(JSON.stringify([...JSON.parse(Buffer.from(given, 'base64url').toString()), 1])).toString('base64url');
    for (const cursor of ['nonsense', Buffer.from('["x", "y"]').toString('base64url'), longer]) {
      const bad = await call(t.app, 'GET', `${BASE}?import_supplier=${tenant.supplier}&cursor=${cursor}`, { token: tenant.token });
      const detail = 'This cursor is not one the service gave; use the Link header of the previous page.';
      assert.deepEqual([bad.status, bad.json], [400, { detail, code: 'invalid', errors: [{ detail, code: 'invalid', attr: 'cursor' }] }], cursor);
    }
    const foreign = await call(t.app, 'GET', `${BASE}?import_supplier=${(await createTenant(t)).supplier}`, { token: tenant.token });
    assert.equal(foreign.json.code, 'import_supplier_not_found');
  });
});

describe('serving while a job runs', () => {
  test('a request over a real socket is answered at once while the workers run records back to back', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    await upload(tenant, job.id, Array.from({ length: 300 }, () => ({ account: accountPayload(tenant.supplier) })));
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    await action(tenant, job.id, 'start');
    await waitUntil(async () => (await getJob(tenant, job.id)).counts.succeeded >= 10, 'the workers are running records', 60_000);
    // On the embedded store the workers' queries resolve as promises only: without a turn of the
    // event loop between them, this socket would not even be read until the job ended.
    const started = Date.now();
    const res = await fetch(`${address}/healthz`);
    const waited = Date.now() - started;
    assert.equal(res.status, 200);
    const meanwhile = await getJob(tenant, job.id);
    assert.notEqual(meanwhile.state, 'completed', 'the job was still running when the answer came');
    assert.ok(waited < 2000, `answered after ${waited} ms`);
    // The rest of the job proves nothing more: cancelled, so that its records do not slow the tests after it.
    assert.equal((await action(tenant, job.id, 'cancel')).status, 200);
    await finished(tenant, job.id, 'cancelled', 60_000);
  });
});

describe('the record queue\'s batches', () => {
  test('two jobs fetched together: one that fails is retried on its own, the other completes once', async () => {
    const name = unique('batch_probe').replace(/-/g, '_');
    await t.queue.define(name, { retryLimit: 1, retryDelay: 0, retryBackoff: false });
    const policy = { retryLimit: 1, retryDelay: 0, retryBackoff: false };
    // Both are queued before the worker starts, so its first fetch of 2 takes both.
    const good = await t.queue.send(name, { n: 0 }, policy);
    const bad = await t.queue.send(name, { n: 1 }, policy);
    const calls: number[] = [];
    await t.queue.work<{ n: number }>(name, { concurrency: 2, batchSize: 2, pollingIntervalSeconds: 0.5 }, async (job) => {
      calls.push(job.data.n);
      if (job.data.n === 1) throw new Error('probe failure');
    });
    try {
      const stateOf = async (id: string | null) => (await t.queue.boss.getJobById(name, id!))?.state;
      // As long as the jobs' own waits in this file: under a full suite on one database a poll can lag.
      await waitUntil(async () => (await stateOf(bad)) === 'failed' && (await stateOf(good)) === 'completed', 'both jobs ended', 60_000);
      assert.deepEqual([calls.filter((n) => n === 0).length, calls.filter((n) => n === 1).length], [1, 2]);
    } finally {
      await t.queue.offWork(name);
    }
  });
});

describe('the record queue\'s shares between organisations', () => {
  /** A probe queue worked as the record queue is (4 workers, shared by `org`); every job waits for `release`. */
  async function probe(jobs: Array<{ org: number }>) {
    const name = unique('share_probe').replace(/-/g, '_');
    await t.queue.define(name, { retryLimit: 0 });
    for (const data of jobs) await t.queue.send(name, data);
    const inHand: number[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => { release = resolve; });
    await t.queue.work<{ org: number }>(name, { concurrency: 4, batchSize: 2, pollingIntervalSeconds: 0.5, shared: true }, async (job) => {
      inHand.push(job.data.org);
      await released;
    });
    const held = () => Object.fromEntries([...new Set(inHand)].sort().map((org) => [org, inHand.filter((o) => o === org).length]));
    return { name, inHand, held, stop: async () => { release(); await t.queue.offWork(name); } };
  }

  test('in turn, and no organisation over half of the workers while another waits', async () => {
    // Organisation 3 queued last and least, yet one of its jobs is in hand with the first four.
    const p = await probe([...Array.from({ length: 6 }, () => ({ org: 1 })), ...Array.from({ length: 6 }, () => ({ org: 2 })), { org: 3 }, { org: 3 }]);
    try {
      await waitUntil(async () => p.inHand.length >= 4, 'the four workers hold jobs');
      assert.deepEqual(p.held(), { 1: 2, 2: 1, 3: 1 });
    } finally {
      await p.stop();
    }
  });

  test('an organisation alone takes all workers but one; that one starts another organisation\'s job at once', async () => {
    const p = await probe(Array.from({ length: 6 }, () => ({ org: 1 })));
    try {
      await waitUntil(async () => p.inHand.length >= 3, 'three workers hold jobs');
      await t.queue.send(p.name, { org: 2 });
      // Started while organisation 1's three are still in hand: the fourth worker was kept for it.
      await waitUntil(async () => p.inHand.includes(2), 'organisation 2\'s job is in hand');
      assert.deepEqual(p.held(), { 1: 3, 2: 1 });
    } finally {
      await p.stop();
    }
  });
});
