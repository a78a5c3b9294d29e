import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { plantConflictOnce } from '../support/accounts.ts';
import { waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// A record whose account was committed, but whose worker died before writing the record's outcome,
// runs again. `created` must still say that this job made the account. The death is simulated by a
// trigger that refuses the record's first outcome writes, as a killed process would never make them:
// the queue then runs those records again (a sequence, which no rollback undoes, counts the refusals).
const logged: Array<{ obj: any; msg: string }> = [];
const workerLogger = { info() {}, warn() {}, error(obj: object, msg: string) { logged.push({ obj, msg }); } };
const t = await buildTestApp({ WORKER_CONCURRENCY: '2', JOB_RETRY_LIMIT: '5', JOB_RETRY_DELAY_SECONDS: '0' }, { workerLogger });
const db = t.store.db;
const BASE = '/v1/data-import/migration-jobs/';
const RECORDS = 4;
const CRASHES = 3;

async function runJob(tenant: Tenant, lines: object[]): Promise<string> {
  const job = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  assert.equal(job.status, 201, job.body);
  const id = job.json.id as string;
  const uploaded = await t.app.inject({
    method: 'POST', url: `${BASE}${id}/records/`, payload: lines.map((l) => JSON.stringify(l)).join('\n'),
    headers: { ...tenant.headers, 'content-type': 'application/x-ndjson' },
  });
  assert.equal(uploaded.statusCode, 200, uploaded.body);
  assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
  return id;
}

describe('a record that fails unexpectedly', () => {
  test('is logged with its stack, job and line; the record says internal_error', async () => {
    const tenant = await createTenant(t);
    const body = `POISON-${unique('note')}`;
    await sql.raw(`CREATE FUNCTION refuse_poison_note() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.body = '${body}' THEN RAISE EXCEPTION 'planted failure'; END IF; RETURN NEW; END $$`).execute(db);
    await sql`CREATE TRIGGER refuse_poison_note BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION refuse_poison_note()`.execute(db);
    const ext = unique('POISON');
    const id = await runJob(tenant, [{ account: accountPayload(tenant.supplier, { external_account_number: ext }), notes: [{ body }] }]);
    await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', 'the job completes', 60_000);
    const [result] = (await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: tenant.headers })).body
      .split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual([result.outcome, result.step, result.errors[0]?.code], ['failed', 'notes', 'internal_error']);
    const entry = logged.find((l) => l.obj.job_id === id);
    assert.ok(entry, 'the failure was logged');
    assert.equal(entry.msg, 'migration record failed unexpectedly');
    assert.deepEqual([entry.obj.line, entry.obj.step], [1, 'notes']);
    assert.match(String(entry.obj.err?.message), /planted failure/);
    assert.match(String(entry.obj.err?.stack), /\n\s+at /, 'with its stack');
  });
});

describe('a record run again after its worker died', () => {
  test('keeps created: true for the accounts this job created', async () => {
    const tenant = await createTenant(t);
    const job = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    assert.equal(job.status, 201, job.body);
    const id = job.json.id as string;
    await sql`CREATE SEQUENCE crash_after_create`.execute(db);
    await sql.raw(`CREATE FUNCTION crash_after_create() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.job_id = '${id}'::uuid AND OLD.outcome = 'running' AND NEW.outcome = 'succeeded'
          AND nextval('crash_after_create') <= ${CRASHES} THEN
          RAISE EXCEPTION 'simulated crash before the outcome was written';
        END IF;
        RETURN NEW;
      END $$`).execute(db);
    await sql`CREATE TRIGGER crash_after_create BEFORE UPDATE ON migration_job_records FOR EACH ROW EXECUTE FUNCTION crash_after_create()`.execute(db);

    const lines = Array.from({ length: RECORDS }, (_, i) => JSON.stringify({ account: accountPayload(tenant.supplier, { external_account_number: `CRASH-${i}` }) }));
    const uploaded = await t.app.inject({
      method: 'POST', url: `${BASE}${id}/records/`, payload: lines.join('\n'),
      headers: { ...tenant.headers, 'content-type': 'application/x-ndjson' },
    });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
    await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', 'the job completes', 60_000);

    const { rows: [crashes] } = await sql<{ n: string }>`SELECT last_value AS n FROM crash_after_create`.execute(db);
    console.log(crashes, await sql`SELECT line, outcome, created, attempts, errors FROM migration_job_records WHERE job_id = ${id}::uuid`.execute(db));
    assert.ok(Number(crashes!.n) >= CRASHES, 'the outcome writes were refused as planned');
    const results = (await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: tenant.headers })).body
      .split('\n').filter(Boolean).map((l) => JSON.parse(l) as { line: number; outcome: string; created: boolean; service_account_number: string });
    const { rows: accounts } = await sql<{ external_account_number: string; number: string }>`
      SELECT external_account_number, number FROM accounts WHERE external_account_number LIKE 'CRASH-%'`.execute(db);
    const numbers = new Map(accounts.map((a) => [a.external_account_number, a.number]));
    assert.equal(results.length, RECORDS);
    for (const r of results) {
      assert.deepEqual([r.outcome, r.created, r.service_account_number], ['succeeded', true, numbers.get(`CRASH-${r.line - 1}`)], `line ${r.line}`);
    }
    const { rows: [attempts] } = await sql<{ again: number }>`
      SELECT count(*) FILTER (WHERE attempts > 1)::int AS again FROM migration_job_records WHERE job_id = ${id}::uuid`.execute(db);
    assert.ok(attempts!.again >= 1, 'some record ran twice');
  });
});

describe('a record rolled back to settle a deadlock', () => {
  test('is retried as a transient failure, and succeeds; it is not an internal_error', async () => {
    const tenant = await createTenant(t);
    const ext = unique('DEADLOCK');
    // What a create met when it and another transaction took the stats counters' rows in opposite orders.
    const planted = await plantConflictOnce(db, ext);
    try {
      const before = logged.length;
      const id = await runJob(tenant, [{ account: accountPayload(tenant.supplier, { external_account_number: ext }) }]);
      await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', 'the job completes', 60_000);
      const [result] = (await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: tenant.headers })).body
        .split('\n').filter(Boolean).map((l) => JSON.parse(l));
      assert.deepEqual([result.outcome, result.created, result.errors], ['succeeded', true, []]);
      const { rows: [tries] } = await sql<{ attempts: number }>`SELECT attempts FROM migration_job_records WHERE job_id = ${id}::uuid`.execute(db);
      assert.equal(tries!.attempts, 2, 'the deadlocked try, then the one that succeeded');
      assert.equal(logged.slice(before).filter((l) => l.obj.job_id === id).length, 0, 'nothing logged as unexpected');
    } finally {
      await planted.remove();
    }
  });
});
