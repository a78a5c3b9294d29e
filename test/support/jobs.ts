import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { waitUntil } from './imports.ts';
import { call, type Tenant, type TestApp } from './test-app.ts';

// A migration job over HTTP, as a client runs one: created, its records uploaded as NDJSON, started,
// and (runJobToEnd) followed to its end and its results read back.
export const JOBS = '/v1/data-import/migration-jobs/';

/** A record's result as GET …/records/ answers it. */
export interface RecordResult {
  line: number; outcome: string; step: string | null; created: boolean | null;
  errors: Array<{ code: string; attr: string; detail: string }>;
}

/** Creates a job and uploads its lines (a record, or a line's text as it is), not started; answers its id. */
export async function uploadedJob(t: TestApp, tenant: Tenant, records: Array<object | string>, options: { dryRun?: boolean } = {}): Promise<string> {
  const body = { import_supplier: tenant.supplier, operations_team_name: tenant.team, ...(options.dryRun ? { dry_run: true } : {}) };
  const created = await call(t.app, 'POST', JOBS, { token: tenant.token, body });
  assert.equal(created.status, 201, created.body);
  const id = created.json.id as string;
  const res = await t.app.inject({
    method: 'POST', url: `${JOBS}${id}/records/`, payload: records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'),
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
  });
  assert.equal(res.statusCode, 200, res.body);
  return id;
}

/** Creates, uploads and starts a job of `records`; answers its id. */
export async function startJob(t: TestApp, tenant: Tenant, records: Array<object | string>, options: { dryRun?: boolean } = {}): Promise<string> {
  const id = await uploadedJob(t, tenant, records, options);
  assert.equal((await call(t.app, 'POST', `${JOBS}${id}/start/`, { token: tenant.token })).status, 200);
  return id;
}

/** startJob, then waits for the job to complete and answers its id and its records' results in line order. */
export async function runJobToEnd(t: TestApp, tenant: Tenant, records: Array<object | string>, options: { dryRun?: boolean } = {}): Promise<{ id: string; lines: RecordResult[] }> {
  const id = await startJob(t, tenant, records, options);
  let view: { state: string; counts: Record<string, number> } | undefined;
  await waitUntil(async () => (view = (await call(t.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json).state === 'completed', `job ${id} completes`, 60_000);
  assert.deepEqual(view!.counts, await countedRecords(t.store.db, id), 'the view\'s counts agree with a full count of the records');
  const results = await t.app.inject({ method: 'GET', url: `${JOBS}${id}/records/`, headers: { authorization: `Token ${tenant.token}` } });
  return { id, lines: results.body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as RecordResult) };
}

/**
 * A full count of the job's records by outcome, as a job's view shows its counts. A view's counts
 * come from counters that triggers keep (and, once the job has ended, the figures kept from them):
 * whatever wrote the records, the two must agree.
 */
export async function countedRecords(db: Kysely<Database>, jobId: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ outcome: string; n: number }>`SELECT outcome, count(*)::int AS n FROM migration_job_records
    WHERE job_id = ${jobId}::uuid GROUP BY outcome`.execute(db);
  const counts: Record<string, number> = { total: 0, pending: 0, running: 0, succeeded: 0, skipped: 0, failed: 0, cancelled: 0 };
  for (const row of rows) {
    counts[row.outcome] = row.n;
    counts.total! += row.n;
  }
  return counts;
}
