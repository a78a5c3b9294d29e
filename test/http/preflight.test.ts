import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import * as admin from '../../src/modules/admin/index.ts';
import type { AccountData } from '../../src/modules/account-data/index.ts';
import { createWebhook } from '../../src/modules/webhooks/index.ts';
import { eventsOf } from '../support/events.ts';
import { SLOW_MS, startFakeVendor } from '../support/fake-vendor.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { stageAndCreate, waitUntil } from '../support/imports.ts';
import { runJobToEnd } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// The pre-flight: a dry-run job runs every step of every record with the real rules, against the
// store as it is, decides the conflicts within the file by line order, and leaves the store exactly
// as it found it. The real run of the same file then gives every record the pre-flight's verdict.
const t = await buildTestApp({ WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '2', JOB_RETRY_DELAY_SECONDS: '0', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
const db = t.store.db;
const vendor = await startFakeVendor();
const MAX = 999_999_999_999.99;

const runJob = async (tenant: Tenant, lines: object[], dryRun: boolean) => (await runJobToEnd(t, tenant, lines, { dryRun })).lines;

/** Each line's verdict: outcome, step and its errors' codes at their attrs. */
const verdicts = (lines: Awaited<ReturnType<typeof runJob>>) =>
  lines.map((l) => ({ line: l.line, outcome: l.outcome, step: l.step, errors: l.errors.map((e) => `${e.code}@${e.attr}`) }));

/**
 * Every table of the store, each as a row count and a checksum of its rows, less the job's own rows:
 * the jobs, their records and their record counters, the job's events (migration_job.* and migration_record.*), the queue
 * (another schema), and the webhooks' fan-out cursor, which the fan-out's schedule moves over the
 * job's own events whenever it happens to run.
 */
async function snapshot(): Promise<Record<string, string>> {
  const { rows: tables } = await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
    WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`.execute(db);
  const own = new Set(['migration_jobs', 'migration_job_records', 'migration_job_record_counts', 'migration_job_supply_points', 'webhook_fanout_cursor']);
  const out: Record<string, string> = {};
  for (const { name } of tables) {
    if (own.has(name)) continue;
    const where = name === 'events' ? sql`WHERE type NOT LIKE 'migration_job.%' AND type NOT LIKE 'migration_record.%'` : sql``;
    const { rows } = await sql<{ n: number; sum: string | null }>`SELECT count(*)::int AS n, md5(string_agg(x::text, '|' ORDER BY x::text)) AS sum
      FROM ${sql.table(name)} x ${where}`.execute(db);
    out[name] = `${rows[0]!.n}:${rows[0]!.sum ?? ''}`;
  }
  return out;
}

const electricity = (account: AccountData) => account.supply_addresses[0]!.supply_points[0] as { identifier: string };
const statement = (id: string, from: string, to: string) => ({
  bill_period_from_date: from, bill_period_to_date: to, statement_id: id, issued_date: to, number: `No-${id}`, gross_amount: 120.5,
});
const charge = (id: string, amount = 12.3) => ({ transaction_id: id, transaction_date: '2024-03-01', amount, type: 'CHARGE', reason: 'IMPORTED_CHARGE' });

describe('a dry-run job is a full pre-flight', () => {
  test('every planted error is found, the store is left as it was, and the real run gives every record the same verdict', async () => {
    // With welcome emails on: a real create queues them, a pre-flight must not.
    const tenant = await createTenant(t, { customerEmails: true });
    const vendorCode = unique('VEND');
    await admin.createVendor(db, vendorCode, { kind: 'http', url: vendor.url, timeoutMs: 2000 });
    const found = unique('REF');
    vendor.set(found, 'found');

    // Already in the store: one account holding a supply point, one with a transaction, one at its balance bound.
    const holder = await stageAndCreate(t, tenant);
    const withHistory = await stageAndCreate(t, tenant);
    const history = (ext: string, transactions: unknown[]) => call(t.app, 'POST', '/v1/data-import/transactions/create/',
      { token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: ext, transactions } });
    assert.equal((await history(withHistory.payload.external_account_number, [charge('KEPT-1', 10)])).status, 201);
    const atBound = await stageAndCreate(t, tenant);
    for (let batch = 0; batch < 2; batch += 1) {
      const charges = Array.from({ length: 50 }, (_, i) => charge(`MAX-${batch * 50 + i}`, MAX));
      assert.equal((await history(atBound.payload.external_account_number, charges)).status, 201);
    }

    const account = (change?: (a: AccountData) => void) => {
      const a = accountPayload(tenant.supplier);
      change?.(a);
      return a;
    };
    const good = account();
    const book: object[] = [
      // 1: everything right, every step.
      { account: good, statements: [statement('S-1', '2024-01-01', '2024-01-31')], transactions: [charge('T-1')], notes: [{ body: 'Moved in' }],
        payment_instruction: { vendor: vendorCode, reference: found, type: 'CARD' } },
      // 2, 3: the account's own rules.
      { account: account((a) => { a.customers[0]!.mobile = '12'; }) },
      { account: account((a) => { a.billing_address.postal_code = 'not a postcode'; }) },
      // 4: line 1's account again; 5: line 1's electricity supply point on another account of the file.
      { account: good },
      { account: account((a) => { electricity(a).identifier = electricity(good).identifier; }) },
      // 6: a supply point already on a stored account.
      { account: account((a) => { electricity(a).identifier = electricity(holder.payload).identifier; }) },
      // 7: a statement whose period ends before it starts.
      { account: account(), statements: [statement('S-7', '2024-02-28', '2024-02-01')] },
      // 8: a transaction_id twice in one record.
      { account: account(), transactions: [charge('T-8'), charge('T-8')] },
      // 9: a stored account's transaction sent with another amount; 10: a charge past the stored balance's bound.
      { account: withHistory.payload, transactions: [charge('KEPT-1', 11)] },
      { account: atBound.payload, transactions: [charge('MAX-100', MAX)] },
      // 11: a note with no body; 12: a reference the vendor does not know.
      { account: account(), notes: [{ body: '' }] },
      { account: account(), payment_instruction: { vendor: vendorCode, reference: unique('MISSING'), type: 'CARD' } },
      // 13: a new account whose charges together cross the bound.
      { account: account(), transactions: Array.from({ length: 101 }, (_, i) => charge(`BIG-${i}`, MAX)) },
      // 14: a statement_id twice in one record.
      { account: account(), statements: [statement('S-14', '2024-01-01', '2024-01-31'), statement('S-14', '2024-02-01', '2024-02-29')] },
    ];

    // The stored accounts' welcome emails sent first: their sending would otherwise change the store meanwhile.
    await waitUntil(async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_emails WHERE sent_at IS NULL`.execute(db)).rows[0]!.n === 0,
      'the stored accounts\' emails sent', 30_000);
    const before = await snapshot();
    const preflight = verdicts(await runJob(tenant, book, true));
    assert.deepEqual(await snapshot(), before, 'the pre-flight left the store as it was');

    const codes = (line: number) => preflight[line - 1]!;
    assert.deepEqual(codes(1), { line: 1, outcome: 'succeeded', step: null, errors: [] });
    assert.deepEqual(codes(2), { line: 2, outcome: 'failed', step: 'account', errors: ['invalid_phone_number@account.customers.0.mobile'] });
    assert.deepEqual(codes(3), { line: 3, outcome: 'failed', step: 'account', errors: ['invalid_postcode@account.billing_address.postal_code'] });
    assert.deepEqual(codes(4), { line: 4, outcome: 'failed', step: 'account', errors: ['duplicate_in_file@account.external_account_number'] });
    assert.deepEqual(codes(5), { line: 5, outcome: 'failed', step: 'account',
      errors: ['supply_point_already_registered@account.supply_addresses.0.supply_points.0.identifier'] });
    assert.deepEqual(codes(6), { line: 6, outcome: 'failed', step: 'account',
      errors: ['supply_point_already_registered@account.supply_addresses.0.supply_points.0.identifier'] });
    assert.equal(codes(7).step, 'statements');
    assert.match(codes(7).errors[0]!, /@statements\.0\./);
    assert.deepEqual(codes(8), { line: 8, outcome: 'failed', step: 'transactions', errors: ['duplicate@transactions.1.transaction_id'] });
    assert.deepEqual(codes(9), { line: 9, outcome: 'failed', step: 'transactions', errors: ['conflict@transactions.0.amount'] });
    assert.deepEqual(codes(10), { line: 10, outcome: 'failed', step: 'transactions', errors: ['account_balance_out_of_range@transactions.0.amount'] });
    assert.equal(codes(11).step, 'notes');
    assert.deepEqual(codes(12), { line: 12, outcome: 'failed', step: 'payment_instruction', errors: ['payment_instruction_not_found@payment_instruction.reference'] });
    assert.deepEqual(codes(13), { line: 13, outcome: 'failed', step: 'transactions', errors: ['account_balance_out_of_range@transactions.100.amount'] });
    assert.deepEqual(codes(14), { line: 14, outcome: 'failed', step: 'statements', errors: ['duplicate@statements.1.statement_id'] });

    // The promise: the same file, the store unchanged, the real run gives each record the same verdict.
    const real = verdicts(await runJob(tenant, book, false));
    assert.deepEqual(real, preflight);
    // And the real run did write what the pre-flight left out (the snapshot would have seen it): line 1's account and its emails.
    const { rows: [emails] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_emails o JOIN accounts a ON a.id = o.account_id
      WHERE a.external_account_number = ${good.external_account_number}`.execute(db);
    assert.ok(emails!.n > 0, 'the real create queued its welcome emails');
  });

  test('a supply point on a stored account, with welcome emails off: the pre-flight names it as the real run does', async () => {
    // Without welcome emails a create may be one statement of its own: in a pre-flight it must still
    // be answered as the refusal it is, not end the pre-flight's transaction (internal_error).
    const tenant = await createTenant(t);
    const holder = await stageAndCreate(t, tenant);
    const clash = accountPayload(tenant.supplier);
    electricity(clash).identifier = electricity(holder.payload).identifier;
    const refused = { outcome: 'failed', step: 'account', errors: ['supply_point_already_registered@account.supply_addresses.0.supply_points.0.identifier'] };
    const preflight = verdicts(await runJob(tenant, [{ account: clash }, { account: accountPayload(tenant.supplier) }], true));
    assert.deepEqual(preflight, [{ line: 1, ...refused }, { line: 2, outcome: 'succeeded', step: null, errors: [] }]);
    assert.deepEqual(verdicts(await runJob(tenant, [{ account: clash }, { account: accountPayload(tenant.supplier) }], false)), preflight);
  });

  test('a pre-flight asks a payment vendor with no transaction open, once a record, as the real run does', async () => {
    const tenant = await createTenant(t);
    const vendorCode = unique('VEND');
    await admin.createVendor(db, vendorCode, { kind: 'http', url: vendor.url, timeoutMs: 5000 });
    const [slow, missing] = [unique('SLOW'), unique('MISSING')];
    vendor.set(slow, 'slow');
    const book = [
      { account: accountPayload(tenant.supplier), payment_instruction: { vendor: vendorCode, reference: slow, type: 'CARD' } },
      { account: accountPayload(tenant.supplier), payment_instruction: { vendor: vendorCode, reference: missing, type: 'CARD' } },
    ];
    // While the vendor takes its time over line 1, the store answers at once: no transaction of the
    // pre-flight holds it (on PGlite, its one session; on a server, a connection idle in a transaction).
    const running = runJob(tenant, book, true);
    await waitUntil(async () => vendor.hits(slow) === 1, 'the vendor asked', 20_000);
    const asked = Date.now();
    await sql`SELECT 1`.execute(db);
    assert.ok(Date.now() - asked < SLOW_MS / 2, `the store answered after ${Date.now() - asked} ms`);
    // Half-way through the vendor's time, no session has been idle in a transaction for most of it
    // (the other record's rehearsal is, between its statements, for moments only).
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS / 2));
    const { rows: [open] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND state_change < now() - interval '400 milliseconds'`.execute(db);
    assert.equal(open!.n, 0, 'no transaction open while the vendor is asked');
    const preflight = verdicts(await running);
    assert.deepEqual(preflight, [
      { line: 1, outcome: 'succeeded', step: null, errors: [] },
      { line: 2, outcome: 'failed', step: 'payment_instruction', errors: ['payment_instruction_not_found@payment_instruction.reference'] },
    ]);
    assert.deepEqual([vendor.hits(slow), vendor.hits(missing)], [1, 1], 'each reference asked once');
    assert.deepEqual(verdicts(await runJob(tenant, book, false)), preflight);
  });

  test('within the file the earlier line wins whatever order the records run in', async () => {
    const tenant = await createTenant(t);
    const first = accountPayload(tenant.supplier);
    const lines = [{ account: first }];
    // Many later lines, each naming line 1's supply point: with four workers some run before line 1.
    for (let i = 0; i < 12; i += 1) {
      const later = accountPayload(tenant.supplier);
      electricity(later).identifier = electricity(first).identifier;
      lines.push({ account: later });
    }
    for (const dryRun of [true, false]) {
      const results = await runJob(tenant, lines, dryRun);
      assert.deepEqual(results.map((r) => r.outcome), ['succeeded', ...Array(12).fill('failed')]);
      for (const r of results.slice(1)) {
        assert.equal(r.errors[0]!.code, 'supply_point_already_registered');
        assert.match(r.errors[0]!.detail, /line 1 of this job/);
      }
    }
  });

  test('with a webhook taking every event, a pre-flight pushes only the job\'s own events', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    const { webhook } = await createWebhook(db, tenant.organisation, receiver.url);
    const bad = accountPayload(tenant.supplier);
    bad.customers[0]!.mobile = '12';
    await runJob(tenant, [{ account: accountPayload(tenant.supplier), notes: [{ body: 'x' }], transactions: [charge('T-1')] }, { account: bad }], true);
    // The feed holds what was committed: the failed record and the job's end, nothing of the rehearsed steps.
    const feed = await eventsOf(t, tenant, 2);
    assert.deepEqual(feed.map((e) => e.type).sort(), ['migration_job.completed', 'migration_record.failed']);
    const pushed = await receiver.waitFor(2);
    assert.deepEqual(pushed.map((r) => JSON.parse(r.body).type).sort(), ['migration_job.completed', 'migration_record.failed']);
    // The deliveries are logged before the file ends (and its database is dropped under them).
    await waitUntil(async () => {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${webhook}`.execute(db);
      return rows[0]!.n >= 2;
    }, 'both deliveries logged');
  });
});
