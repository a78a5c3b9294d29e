import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createWebhook } from '../../src/modules/webhooks/index.ts';
import { eventsOf } from '../support/events.ts';
import { waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';
import { startReceiver } from '../support/webhook-receiver.ts';

// Every record a migration job fails, at any step including parse, is a migration_record.failed
// event: in the feed, and pushed to the organisation's webhooks.

const t = await buildTestApp({ WORKER_CONCURRENCY: '2', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '200' });
const BASE = '/v1/data-import/migration-jobs/';

async function newJob(tenant: Tenant, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, ...extra } });
  assert.equal(res.status, 201, res.body);
  return res.json.id;
}
async function upload(tenant: Tenant, id: string, lines: string[]) {
  const res = await t.app.inject({
    method: 'POST', url: `${BASE}${id}/records/`, payload: lines.join('\n'),
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
  });
  assert.equal(res.statusCode, 200, res.body);
}
async function runToEnd(tenant: Tenant, id: string) {
  const started = await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token });
  assert.equal(started.status, 200, started.body);
  await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', `job ${id} completed`, 60_000);
}

describe('migration_record.failed', () => {
  test('a parse failure and a rule failure are events in the feed and at a webhook; a good record is none', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    await createWebhook(t.store.db, tenant.organisation, receiver.url, 'migration_record.failed');
    const job = await newJob(tenant);
    const bad = accountPayload(tenant.supplier);
    bad.customers[0]!.mobile = '07911123456';
    // Six errors: the event keeps the first five.
    bad.customers[0]!.email = 'nope';
    bad.customers[0]!.given_name = '';
    bad.customers[0]!.family_name = '';
    bad.billing_address.country = 'XX';
    bad.supply_addresses[0]!.supply_address1 = '';
    const good = accountPayload(tenant.supplier);
    await upload(tenant, job, ['not json', JSON.stringify({ account: bad }), JSON.stringify({ account: good })]);

    // The parse failure is decided at upload: its event is there before the job starts.
    const atUpload = await eventsOf(t, tenant, 1);
    assert.deepEqual(atUpload.map((e) => [e.type, e.external_account_number, e.data]), [['migration_record.failed', null, {
      job_id: job, line: 1, external_account_number: null, step: 'parse',
      errors: [{ code: 'parse_error', detail: 'The line is not valid JSON.', attr: 'non_field_errors' }],
    }]]);

    await runToEnd(tenant, job);
    // The feed shows an event once every transaction older than it has ended; on a shared PostgreSQL
    // another file's transaction can hold the rule failure back while the good record's events are
    // already shown: wait for the failures themselves, not for any two events.
    const failures = async () => (await eventsOf(t, tenant, 1)).filter((e) => e.type === 'migration_record.failed');
    let events: any[] = [];
    await waitUntil(async () => (events = await failures()).length >= 2, 'both failures are in the feed', 30_000);
    assert.equal(events.length, 2, JSON.stringify(events));
    const rule = events[1];
    assert.equal(rule.external_account_number, bad.external_account_number);
    const results = await t.app.inject({ method: 'GET', url: `${BASE}${job}/records/?outcome=failed`, headers: { authorization: `Token ${tenant.token}` } });
    const result = results.body.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((r: any) => r.line === 2);
    // The result keeps every error; the event the first five, as the result orders them.
    assert.equal(result.errors.length, 6);
    assert.deepEqual(rule.data, {
      job_id: job, line: 2, external_account_number: bad.external_account_number, step: 'account', errors: result.errors.slice(0, 5),
    });
    assert.deepEqual(result.errors.map((e: any) => e.code).sort(),
      ['blank', 'blank', 'blank', 'invalid_country', 'invalid_email', 'invalid_phone_number']);

    // The webhook gets both, as the feed shows them.
    const got = await receiver.waitFor(2);
    const delivered = got.map((r) => JSON.parse(r.body)).sort((a, b) => a.data.line - b.data.line);
    assert.deepEqual(delivered.map((e) => [e.type, e.id, e.data]), events.map((e) => [e.type, e.id, e.data]));
  });

  test('a duplicate account number refused at upload is an event too', async () => {
    const tenant = await createTenant(t);
    const job = await newJob(tenant);
    const account = accountPayload(tenant.supplier);
    await upload(tenant, job, [JSON.stringify({ account }), JSON.stringify({ account })]);
    const events = await eventsOf(t, tenant, 1);
    assert.deepEqual(events.map((e) => [e.type, e.external_account_number, e.data.line, e.data.step, e.data.errors[0].code]),
      [['migration_record.failed', account.external_account_number, 2, 'account', 'duplicate_in_file']]);
  });
});
