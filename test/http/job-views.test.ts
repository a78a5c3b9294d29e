import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { bucketSecondsFor } from '../../src/modules/migration-jobs/index.ts';
import { runJobToEnd, uploadedJob } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// The lead's views of a job: its records searched by account, outcome and error code (rejected ones
// included), its pace on a scale that fits it, and the supplier's headline counts with job rejects.
const t = await buildTestApp({ WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '1', JOB_RETRY_DELAY_SECONDS: '0' });
const db = t.store.db;
const BASE = '/v1/data-import/migration-jobs/';

const getJob = async (tenant: Tenant, id: string) => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json;

/**
 * A finished job of six lines: three accounts that import, one that fails validation (never staged),
 * a line that is not JSON, and the first account again (a duplicate).
 */
async function finishedJob(tenant: Tenant) {
  const good = [accountPayload(tenant.supplier), accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
  const bad = accountPayload(tenant.supplier);
  bad.customers[0]!.mobile = 'abc';
  const lines = [...good.map((account) => JSON.stringify({ account })), JSON.stringify({ account: bad }), '{not json', JSON.stringify({ account: good[0] })];
  return { id: (await runJobToEnd(t, tenant, lines)).id, good, bad };
}

/**
 * A completed job of six lines whose failures tell the first error from the others: two accounts
 * with a mobile that is no phone number, one with a billing country that is no country, one with a
 * mobile that is no phone number and a date of birth that is no date (two errors, the mobile's
 * first), a line that is not JSON, and an account that imports.
 */
async function failuresJob(tenant: Tenant) {
  const account = (change: (a: ReturnType<typeof accountPayload>) => void) => {
    const a = accountPayload(tenant.supplier);
    change(a);
    return a;
  };
  const phones = [account((a) => { a.customers[0]!.mobile = '12'; }), account((a) => { a.customers[0]!.mobile = '12'; })];
  const country = account((a) => { a.billing_address.country = 'ZZ'; });
  const twoErrors = account((a) => { a.customers[0]!.mobile = '12'; a.customers[0]!.date_of_birth = 'yesterday'; });
  const lines = [...phones, country, twoErrors].map((a) => JSON.stringify({ account: a }));
  lines.push('{not json', JSON.stringify({ account: accountPayload(tenant.supplier) }));
  return { id: (await runJobToEnd(t, tenant, lines)).id, twoErrors };
}

const search = (tenant: Tenant, id: string, query: string) => call(t.app, 'GET', `${BASE}${id}/records/search/?${query}`, { token: tenant.token });

describe('GET migration-jobs/<id>/records/search/', () => {
  test('finds records by account, outcome and error code, rejected ones included, a page at a time', async () => {
    const tenant = await createTenant(t);
    const { id, good, bad } = await finishedJob(tenant);

    const byAccount = await search(tenant, id, `external_account_number=${bad.external_account_number}`);
    assert.equal(byAccount.status, 200, byAccount.body);
    assert.equal(byAccount.json.next_after_line, null);
    assert.deepEqual(byAccount.json.records.map((r: any) => [r.line, r.external_account_number, r.outcome, r.step, r.errors[0].code]),
      [[4, bad.external_account_number, 'failed', 'account', 'invalid_phone_number']]);
    // The same record as the job's results list gives it.
    const listed = (await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: { authorization: `Token ${tenant.token}` } }))
      .body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(byAccount.json.records[0], listed[3]);

    const failed = await search(tenant, id, 'outcome=failed');
    assert.deepEqual(failed.json.records.map((r: any) => [r.line, r.step]), [[4, 'account'], [5, 'parse'], [6, 'account']]);
    const duplicates = await search(tenant, id, `outcome=failed&error_code=duplicate_in_file&external_account_number=${good[0]!.external_account_number}`);
    assert.deepEqual(duplicates.json.records.map((r: any) => r.line), [6]);
    assert.deepEqual((await search(tenant, id, 'error_code=invalid_phone_number&outcome=succeeded')).json.records, []);

    const first = await search(tenant, id, 'page_size=2');
    assert.deepEqual([first.json.records.map((r: any) => r.line), first.json.next_after_line], [[1, 2], 2]);
    const last = await search(tenant, id, 'page_size=4&after_line=2');
    assert.deepEqual([last.json.records.map((r: any) => r.line), last.json.next_after_line], [[3, 4, 5, 6], null]);

    const wrong = await search(tenant, id, 'outcome=done');
    assert.equal(wrong.status, 400);
    assert.deepEqual(wrong.json, { detail: 'The request failed validation.', code: 'invalid', errors: [
      { detail: '"done" is not a valid choice. Allowed: pending, running, succeeded, skipped, failed, cancelled.', code: 'invalid_choice', attr: 'outcome' }] });
    const stranger = await createTenant(t);
    const foreign = await search(stranger, id, 'outcome=failed');
    assert.deepEqual([foreign.status, foreign.json], [404, { detail: `No migration job "${id}".`, code: 'not_found' }]);
  });

  test('the supplier\'s headline counts name the records its jobs rejected before staging', async () => {
    const tenant = await createTenant(t);
    await finishedJob(tenant);
    const stats = await call(t.app, 'GET', `/v1/data-import/stats/${tenant.supplier}/`, { token: tenant.token });
    // The invalid account, the unreadable line and the duplicate; the three good accounts are imported.
    assert.deepEqual(stats.json.counts, { staged: 0, in_progress: 0, imported: 3, failed: 0, skipped: 0, rejected: 3 });
  });

  test('a pre-flight (dry-run) job leaves the headline counts as they were: its rejected records count nowhere', async () => {
    const tenant = await createTenant(t);
    const bad = accountPayload(tenant.supplier);
    bad.customers[0]!.mobile = 'abc';
    const { lines } = await runJobToEnd(t, tenant, [JSON.stringify({ account: bad }), '{not json', JSON.stringify({ account: accountPayload(tenant.supplier) })], { dryRun: true });
    assert.deepEqual(lines.map((l) => l.outcome), ['failed', 'failed', 'succeeded'], 'the rehearsal ran');
    const stats = await call(t.app, 'GET', `/v1/data-import/stats/${tenant.supplier}/`, { token: tenant.token });
    assert.deepEqual(stats.json.counts, { staged: 0, in_progress: 0, imported: 0, failed: 0, skipped: 0, rejected: 0 });
  });
});

describe('a job\'s failures', () => {
  test('errors_by_code counts the first error of each failed record only, largest first, then by code', async () => {
    const tenant = await createTenant(t);
    const { id } = await failuresJob(tenant);
    // Line 4's second error (invalid, at the date of birth) is not counted; invalid_country and
    // parse_error, one record each, are in code order.
    const expected = [{ code: 'invalid_phone_number', count: 3 }, { code: 'invalid_country', count: 1 }, { code: 'parse_error', count: 1 }];
    const job = await getJob(tenant, id);
    assert.deepEqual([job.state, job.counts.failed, job.errors_by_code], ['completed', 5, expected]);
    const list = await call(t.app, 'GET', `${BASE}?import_supplier=${tenant.supplier}`, { token: tenant.token });
    assert.deepEqual(list.json.map((j: any) => [j.id, j.errors_by_code]), [[id, expected]]);
  });

  test('the CSV results give a record\'s first error in the error columns and how many it has in error_count', async () => {
    const tenant = await createTenant(t);
    const { id, twoErrors } = await failuresJob(tenant);
    const headers = { authorization: `Token ${tenant.token}` };
    const ndjson = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/?outcome=failed`, headers });
    const line4 = ndjson.body.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((r: any) => r.line === 4);
    assert.deepEqual(line4.errors.map((e: any) => [e.code, e.attr]),
      [['invalid_phone_number', 'account.customers.0.mobile'], ['invalid', 'account.customers.0.date_of_birth']]);
    const csv = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/?outcome=failed`, headers: { ...headers, accept: 'text/csv' } });
    assert.equal(csv.statusCode, 200, csv.body);
    const rows = csv.body.split('\r\n');
    assert.equal(rows[0], 'line,external_account_number,outcome,step,service_account_number,error_code,error_attr,error_detail,error_count,warning_count,first_warning_code');
    assert.deepEqual(rows.filter((row) => row.startsWith('4,')), [`4,${twoErrors.external_account_number},failed,account,,invalid_phone_number,`
      + 'account.customers.0.mobile,Enter a valid phone number in international format with a leading +.,2,0,']);
  });
});

describe('CSV or NDJSON, by the Accept header and its weights', () => {
  test('records/ and reconciliation/exceptions/ answer CSV only when text/csv is preferred', async () => {
    const tenant = await createTenant(t);
    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const id = created.json.id as string;
    const cases: Array<[string | undefined, 'csv' | 'ndjson']> = [
      [undefined, 'ndjson'], ['*/*', 'ndjson'], ['application/x-ndjson', 'ndjson'], ['image/png', 'ndjson'],
      ['text/csv', 'csv'], ['TEXT/CSV; charset=utf-8', 'csv'], ['text/*', 'csv'], ['text/csv, */*', 'csv'],
      ['text/csv;q=0, application/x-ndjson', 'ndjson'], ['text/csv;q=0', 'ndjson'],
      ['text/csv;q=0.5, application/x-ndjson', 'ndjson'], ['application/x-ndjson;q=0.4, text/csv;q=0.9', 'csv'],
      ['text/csv, application/x-ndjson', 'ndjson'],
    ];
    for (const path of ['records/', 'reconciliation/exceptions/']) {
      for (const [accept, expected] of cases) {
        const res = await t.app.inject({ method: 'GET', url: `${BASE}${id}/${path}`,
          headers: { authorization: `Token ${tenant.token}`, ...(accept === undefined ? {} : { accept }) } });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['content-type'], expected === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8', `${path} with ${accept}`);
      }
    }
  });
});

describe('a running job\'s rate and ETA', () => {
  test('eta_seconds: the records left (pending and running) at records_per_minute, taken over five minutes or since the job began', async () => {
    const tenant = await createTenant(t);
    const id = await uploadedJob(t, tenant, Array.from({ length: 15 }, () => JSON.stringify({ account: accountPayload(tenant.supplier) })));
    // The job is never started, so no worker claims its records: its progress is written as workers
    // would leave it (as dashboard.test.ts does), an hour after it began running.
    const twoErrors = JSON.stringify([{ code: 'invalid_phone_number', attr: 'account.customers.0.mobile', detail: 'Enter a valid phone number.' },
      { code: 'invalid', attr: 'account.customers.0.date_of_birth', detail: 'Date has wrong format.' }]);
    await sql`UPDATE migration_jobs SET state = 'running', started_at = now() - interval '1 hour' WHERE id = ${id}::uuid`.execute(db);
    await sql`UPDATE migration_job_records SET outcome = 'succeeded', finished_at = now() - interval '1 minute' WHERE job_id = ${id}::uuid AND line <= 8`.execute(db);
    await sql`UPDATE migration_job_records SET outcome = 'failed', step = 'account', finished_at = now() - interval '4 minutes', errors = ${twoErrors}::jsonb
      WHERE job_id = ${id}::uuid AND line BETWEEN 9 AND 10`.execute(db);
    await sql`UPDATE migration_job_records SET outcome = 'succeeded', finished_at = now() - interval '20 minutes' WHERE job_id = ${id}::uuid AND line BETWEEN 11 AND 12`.execute(db);
    await sql`UPDATE migration_job_records SET outcome = 'running' WHERE job_id = ${id}::uuid AND line = 13`.execute(db);
    const pace = (job: any) => ({ state: job.state, counts: job.counts, errors_by_code: job.errors_by_code, records_per_minute: job.records_per_minute, eta_seconds: job.eta_seconds });

    // 10 records finished in the last five minutes (not the two of 20 minutes ago): 2 a minute; 3
    // left (lines 13-15) take 90 s. A running job counts the first error of each failed record too.
    assert.deepEqual(pace(await getJob(tenant, id)), {
      state: 'running', counts: { total: 15, pending: 2, running: 1, succeeded: 10, skipped: 0, failed: 2, cancelled: 0 },
      errors_by_code: [{ code: 'invalid_phone_number', count: 2 }], records_per_minute: 2, eta_seconds: 90,
    });

    // Begun 10 s ago, 14 records finished since (lines 13 and 14 too): the rate is taken over half a
    // minute (the least), 28 a minute, and the one left (line 15) takes 60 / 28 s, rounded up to 3.
    await sql`UPDATE migration_jobs SET started_at = now() - interval '10 seconds' WHERE id = ${id}::uuid`.execute(db);
    await sql`UPDATE migration_job_records SET outcome = 'succeeded' WHERE job_id = ${id}::uuid AND line BETWEEN 13 AND 14`.execute(db);
    await sql`UPDATE migration_job_records SET finished_at = now() - interval '5 seconds' WHERE job_id = ${id}::uuid AND line <= 14`.execute(db);
    const young = await getJob(tenant, id);
    assert.deepEqual([young.state, young.counts.pending, young.counts.running, young.records_per_minute, young.eta_seconds], ['running', 1, 0, 28, 3]);

    // A cancel asked for: the record left is not going to run, so no ETA, while the rate still shows.
    await sql`UPDATE migration_jobs SET cancel_requested = true WHERE id = ${id}::uuid`.execute(db);
    const cancelling = await getJob(tenant, id);
    assert.deepEqual([cancelling.counts.pending, cancelling.records_per_minute, cancelling.eta_seconds], [1, 28, null]);
    await sql`UPDATE migration_jobs SET cancel_requested = false WHERE id = ${id}::uuid`.execute(db);

    // Nothing left (the job not yet marked completed): no ETA, while the rate still shows.
    await sql`UPDATE migration_job_records SET outcome = 'succeeded', finished_at = now() WHERE job_id = ${id}::uuid AND line = 15`.execute(db);
    const done = await getJob(tenant, id);
    assert.deepEqual([done.state, done.counts.pending + done.counts.running, done.records_per_minute, done.eta_seconds], ['running', 0, 30, null]);
  });
});

describe('GET migration-jobs/<id>/rate/', () => {
  test('buckets as wide as the job needs, every one from the first finish to the last, counted by outcome', async () => {
    const tenant = await createTenant(t);
    const { id } = await finishedJob(tenant);
    const rate = async () => (await call(t.app, 'GET', `${BASE}${id}/rate/`, { token: tenant.token })).json;
    const quick = await rate();
    assert.equal(quick.bucket_seconds, 60);
    const sum = (b: Array<{ succeeded: number; failed: number }>) => b.reduce((n, x) => [n[0]! + x.succeeded, n[1]! + x.failed], [0, 0]);
    assert.deepEqual(sum(quick.buckets), [3, 3]);

    // The same job spread over three days (finish times moved by SQL): hourly buckets, empty ones kept.
    await sql`UPDATE migration_job_records SET finished_at = timestamptz '2025-03-01T10:15:00Z' + (line - 1) * interval '14 hours'
      WHERE job_id = ${id}::uuid`.execute(db);
    const spread = await rate();
    assert.equal(spread.bucket_seconds, 3600);
    assert.equal(spread.buckets.length, 71);
    assert.deepEqual(spread.buckets[0], { start: '2025-03-01T10:00:00Z', succeeded: 1, failed: 0 });
    assert.deepEqual(spread.buckets[70], { start: '2025-03-04T08:00:00Z', succeeded: 0, failed: 1 });
    assert.deepEqual(sum(spread.buckets), [3, 3]);
  });

  test('the width: minutes for two hours, then five, fifteen minutes, hours, six hours, days', () => {
    assert.deepEqual([0, 119 * 60, 120 * 60, 599 * 60, 1000 * 60, 119 * 3600, 200 * 3600, 119 * 6 * 3600, 400 * 86_400].map(bucketSecondsFor),
      [60, 60, 300, 300, 900, 3600, 21_600, 21_600, 86_400]);
  });
});
