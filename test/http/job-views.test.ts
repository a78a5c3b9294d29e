import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { bucketSecondsFor } from '../../src/modules/migration-jobs/index.ts';
import { waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// The lead's views of a job: its records searched by account, outcome and error code (rejected ones
// included), its pace on a scale that fits it, and the supplier's headline counts with job rejects.
const t = await buildTestApp({ WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '1', JOB_RETRY_DELAY_SECONDS: '0' });
const db = t.store.db;
const BASE = '/v1/data-import/migration-jobs/';

/**
 * A finished job of six lines: three accounts that import, one that fails validation (never staged),
 * a line that is not JSON, and the first account again (a duplicate).
 */
async function finishedJob(tenant: Tenant) {
  const good = [accountPayload(tenant.supplier), accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
  const bad = accountPayload(tenant.supplier);
  bad.customers[0]!.mobile = 'abc';
  const lines = [...good.map((account) => JSON.stringify({ account })), JSON.stringify({ account: bad }), '{not json', JSON.stringify({ account: good[0] })];
  const job = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  assert.equal(job.status, 201, job.body);
  const id = job.json.id as string;
  const up = await t.app.inject({ method: 'POST', url: `${BASE}${id}/records/`, payload: lines.join('\n'),
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
  assert.equal(up.statusCode, 200, up.body);
  assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
  await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', `job ${id} completed`, 60_000);
  return { id, good, bad };
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
