import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertPing } from '../../src/modules/events/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { EVENTS_URL, eventsOf, feed, shapes } from '../support/events.ts';
import { startFakeVendor } from '../support/fake-vendor.ts';
import { PG_ONLY, pgSession, processAccount, stage, supplierIdOf } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp();
const fake = await startFakeVendor();
const UTC_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

function post(tenant: Tenant, path: string, body: Record<string, unknown>, query = '') {
  return call(t.app, 'POST', `/v1/data-import/${path}${query}`, { token: tenant.token, body: { import_supplier: tenant.supplier, ...body } });
}

function errorBody(res: { json: any }, code: string, attr: string) {
  return { detail: res.json.detail, code, errors: [{ detail: res.json.detail, code, attr }] };
}

describe('events: one per change, with its data (D13)', () => {
  test('staging, re-staging and creating: import_process.staged then completed, each a whole event', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    await stage(t, tenant, payload);
    const created = await processAccount(t, tenant, payload.external_account_number);
    assert.equal(created.status, 201, created.body);
    const events = await eventsOf(t, tenant, 3);
    const ext = payload.external_account_number;
    assert.equal(events.length, 3);
    for (const event of events) {
      assert.match(event.id, /^[1-9]\d*$/);
      assert.match(event.created_at, UTC_SECONDS);
      assert.ok(Math.abs(Date.parse(event.created_at) - Date.now()) < 60_000);
    }
    const account = await t.store.db.selectFrom('accounts').select('created_at').where('number', '=', created.json.service_account_number).executeTakeFirstOrThrow();
    assert.deepEqual(events, [
      { id: events[0].id, type: 'import_process.staged', created_at: events[0].created_at, import_supplier: tenant.supplier, external_account_number: ext, data: { first_staging: true } },
      { id: events[1].id, type: 'import_process.staged', created_at: events[1].created_at, import_supplier: tenant.supplier, external_account_number: ext, data: { first_staging: false } },
      {
        id: events[2].id, type: 'import_process.completed', created_at: events[2].created_at, import_supplier: tenant.supplier, external_account_number: ext,
        data: { service_account_number: created.json.service_account_number, account_created_at: `${account.created_at.toISOString().slice(0, 19)}Z` },
      },
    ]);
  });

  test('a failed create attempt is import_process.failed with its error; a refused stage has no event', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    const failed = await processAccount(t, tenant, ext, { operations_team_name: 'No such team' });
    assert.equal(failed.status, 400);
    const notStaged = await processAccount(t, tenant, 'EXT-NEVER-STAGED');
    assert.equal(notStaged.status, 400);
    await processAccount(t, tenant, ext);
    // Re-staging an imported account is refused: no staged event.
    const refused = await call(t.app, 'POST', '/v1/data-import/account-import-process/create-or-update/', { token: tenant.token, body: payload });
    assert.equal(refused.status, 400);
    await stage(t, tenant); // a marker: once it shows, everything committed before it shows too
    const events = shapes(await eventsOf(t, tenant, 5));
    assert.deepEqual(events.slice(1, 3), [
      { type: 'import_process.failed', external_account_number: ext, data: { error: { code: 'operations_team_not_found', detail: 'No operations team named "No such team".', attr: 'operations_team_name' } } },
      { type: 'import_process.failed', external_account_number: 'EXT-NEVER-STAGED', data: { error: { code: 'account_not_staged', detail: notStaged.json.detail, attr: 'external_account_number' } } },
    ]);
    assert.deepEqual(events.map((e) => e.type), [
      'import_process.staged', 'import_process.failed', 'import_process.failed', 'import_process.completed', 'import_process.staged',
    ]);
  });

  test('dry runs: dry_run_completed, dry_run_failed with its error, and nothing of the rolled-back create', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    const ok = await processAccount(t, tenant, ext, { dry_run: true });
    assert.equal(ok.json.code, 'dry_run_rolled_back');
    const bad = await processAccount(t, tenant, ext, { dry_run: true, operations_team_name: 'Nobody' });
    assert.equal(bad.status, 400);
    await stage(t, tenant, payload);
    const events = shapes(await eventsOf(t, tenant, 4));
    assert.deepEqual(events, [
      { type: 'import_process.staged', external_account_number: ext, data: { first_staging: true } },
      { type: 'import_process.dry_run_completed', external_account_number: ext, data: {} },
      { type: 'import_process.dry_run_failed', external_account_number: ext, data: { error: { code: 'operations_team_not_found', detail: 'No operations team named "Nobody".', attr: 'operations_team_name' } } },
      { type: 'import_process.staged', external_account_number: ext, data: { first_staging: false } },
    ]);
  });

  test('post_import.completed for notes, transactions, statements and a payment instruction; none for a failed batch', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    const ext = account.externalAccountNumber;
    const vendor = unique('VEND');
    await admin.createVendor(t.store.db, vendor, { kind: 'http', url: fake.url, timeoutMs: 1000 });
    const reference = unique('ref');
    fake.set(reference, 'found');
    const charge = (id: string) => ({ transaction_id: id, transaction_date: '2024-03-01', amount: 12.3, type: 'CHARGE', reason: 'IMPORTED_CHARGE' });
    const statement = (id: string, from: string, to: string) => ({ statement_id: id, bill_period_from_date: from, bill_period_to_date: to, issued_date: to, number: `No-${id}`, gross_amount: 10 });

    const steps = [
      await post(tenant, 'notes/create/', { external_account_number: ext, notes: [{ body: 'One' }, { body: 'Two' }] }),
      await post(tenant, 'notes/create/', { external_account_number: ext, notes: [{ body: 'One' }, { body: 'Three' }] }),
      await post(tenant, 'transactions/create/', { external_account_number: ext, transactions: [charge('A'), charge('B')] }),
      // A batch that fails rolls back whole: no event.
      await post(tenant, 'transactions/create/', { external_account_number: ext, transactions: [charge('C'), charge('A')] }, '?check_previously_added=false'),
      await post(tenant, 'transactions/create/', { external_account_number: ext, transactions: [charge('A'), charge('C')] }),
      await post(tenant, 'historical-statements/create/', { external_account_number: ext, statements: [statement('S1', '2020-01-01', '2020-01-31')] }),
      await post(tenant, 'historical-statements/create/', { external_account_number: ext, statements: [statement('S1', '2020-01-01', '2020-01-31'), statement('S2', '2020-02-01', '2020-02-29')] }),
      // Overlapping periods fail the batch: no event.
      await post(tenant, 'historical-statements/create/', { external_account_number: ext, statements: [statement('S3', '2020-02-15', '2020-03-31')] }),
      await post(tenant, 'payment-instruction/create/', { external_account_number: ext, vendor, reference, type: 'CARD' }),
      await post(tenant, 'payment-instruction/create/', { external_account_number: ext, vendor, reference, type: 'CARD' }),
    ];
    assert.deepEqual(steps.map((s) => s.status), [201, 201, 201, 400, 201, 201, 201, 400, 201, 201]);
    await stage(t, tenant); // marker
    const events = shapes(await eventsOf(t, tenant, 9));
    const imported = (kind: string, added: number, already: number) =>
      ({ type: 'post_import.completed', external_account_number: ext, data: { kind, added, already_existing: already } });
    assert.deepEqual(events.slice(0, 8), [
      imported('notes', 2, 0), imported('notes', 1, 1),
      imported('transactions', 2, 0), imported('transactions', 1, 1),
      imported('statements', 1, 0), imported('statements', 1, 1),
      imported('payment_instruction', 1, 0), imported('payment_instruction', 0, 1),
    ]);
    assert.equal(events.length, 9);
    assert.equal(events[8]!.type, 'import_process.staged');
  });

  test('a staging whose transaction rolls back leaves no event (the event commits with the change or not at all)', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    await assert.rejects(t.store.db.transaction().execute(async (trx) => {
      await trx.insertInto('events').values({ supplier_id: supplierId, type: 'import_process.staged', external_account_number: 'EXT-GONE', data: '{"first_staging":true}' }).execute();
      throw new Error('roll back');
    }), /roll back/);
    const payload = await stage(t, tenant);
    assert.deepEqual(shapes(await eventsOf(t, tenant, 1)), [
      { type: 'import_process.staged', external_account_number: payload.external_account_number, data: { first_staging: true } },
    ]);
  });
});

describe('GET events/: order, paging, validation, tenancy', () => {
  test('pages in commit order with after and limit; the last page is short', async () => {
    const tenant = await createTenant(t);
    const exts: string[] = [];
    for (let i = 0; i < 5; i += 1) exts.push((await stage(t, tenant)).external_account_number);
    const all = await eventsOf(t, tenant, 5);
    assert.deepEqual(all.map((e) => e.external_account_number), exts);
    const first = await feed(t, tenant, '&limit=2');
    assert.deepEqual(first.json, all.slice(0, 2));
    const second = await feed(t, tenant, `&limit=2&after=${first.json[1].id}`);
    assert.deepEqual(second.json, all.slice(2, 4));
    const last = await feed(t, tenant, `&limit=2&after=${second.json[1].id}`);
    assert.deepEqual(last.json, all.slice(4));
    const empty = await feed(t, tenant, `&after=${all[4].id}`);
    assert.deepEqual([empty.status, empty.json], [200, []]);
  });

  test('limit defaults to 100', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    await t.store.db.insertInto('events').values(Array.from({ length: 101 }, (_, i) => ({
      supplier_id: supplierId, type: 'import_process.staged', external_account_number: `EXT-${i}`, data: '{"first_staging":true}',
    }))).execute();
    await eventsOf(t, tenant, 101);
    const res = await feed(t, tenant);
    assert.equal(res.json.length, 100);
    assert.equal(res.json[99].external_account_number, 'EXT-99');
  });

  test('bad query parameters are 400 invalid at the parameter, in the D4 shape', async () => {
    const tenant = await createTenant(t);
    const cases: Array<[string, string, string]> = [
      ['&limit=0', 'min_value', 'limit'], ['&limit=1001', 'max_value', 'limit'], ['&limit=ten', 'invalid', 'limit'],
      ['&after=abc', 'invalid', 'after'], ['&after=0', 'invalid', 'after'], ['&colour=red', 'unknown_field', 'colour'],
    ];
    for (const [query, code, attr] of cases) {
      const res = await feed(t, tenant, query);
      assert.equal(res.status, 400, query);
      assert.deepEqual(res.json, { detail: 'The request failed validation.', code: 'invalid', errors: [{ detail: res.json.errors[0].detail, code, attr }] }, query);
    }
    const missing = await call(t.app, 'GET', EVENTS_URL, { token: tenant.token });
    assert.deepEqual(missing.json, { detail: 'The request failed validation.', code: 'invalid', errors: [{ detail: missing.json.errors[0].detail, code: 'required', attr: 'import_supplier' }] });
  });

  test('after naming no event of this supplier (unknown, another supplier\'s, a test ping) is 400 invalid at after', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    await stage(t, other);
    const [foreign] = await eventsOf(t, other, 1);
    for (const after of ['999999999999', foreign.id]) {
      const res = await feed(t, tenant, `&after=${after}`);
      assert.equal(res.status, 400);
      assert.deepEqual(res.json, errorBody(res, 'invalid', 'after'));
      assert.equal(res.json.detail, `No event "${after}" of import supplier "${tenant.supplier}"; it may be older than the retention period. Read from the start without after.`);
    }
    // A test ping's id (the last id a webhook endpoint received may be one) is named as such.
    const ping = await t.store.db.transaction().execute((trx) => insertPing(trx));
    const res = await feed(t, tenant, `&after=${ping.id}`);
    assert.deepEqual(res.json, errorBody(res, 'invalid', 'after'));
    assert.equal(res.json.detail, `Event "${ping.id}" is a test ping: pings go to one webhook endpoint and are in no feed. `
      + `Give the id of the last event of import supplier "${tenant.supplier}" you read, or read from the start without after.`);
  });

  test('another organisation\'s supplier is a 404 like an unknown one; no token is 401', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    await stage(t, other);
    for (const code of [other.supplier, 'NO-SUCH-SUPPLIER']) {
      const res = await call(t.app, 'GET', `${EVENTS_URL}?import_supplier=${code}`, { token: tenant.token });
      assert.equal(res.status, 404);
      assert.deepEqual(res.json, { detail: `No import supplier with code "${code}".`, code: 'not_found' });
    }
    const anonymous = await call(t.app, 'GET', `${EVENTS_URL}?import_supplier=${tenant.supplier}`);
    assert.deepEqual([anonymous.status, anonymous.json.code], [401, 'not_authenticated']);
  });

  test('an event whose transaction commits later, with a smaller id, is never skipped by a reader that paged on', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const slow = await pgSession(t.config.databaseUrl);
    try {
      // The slow transaction takes its id and writes its event first, then stays open.
      await slow.query('BEGIN');
      await slow.query(`INSERT INTO events (supplier_id, type, external_account_number, data) VALUES ($1, 'import_process.staged', 'EXT-SLOW', '{"first_staging":true}')`, [supplierId]);
      const fast = await stage(t, tenant, accountPayload(tenant.supplier));
      // The fast staging has committed (its answer came after its commit), yet the feed holds it back
      // while the older transaction runs.
      assert.deepEqual((await feed(t, tenant)).json, []);
      await slow.query('COMMIT');
      const events = await eventsOf(t, tenant, 2);
      assert.deepEqual(events.map((e) => e.external_account_number), ['EXT-SLOW', fast.external_account_number]);
      assert.ok(Number(events[0].id) < Number(events[1].id));
    } finally {
      await slow.end();
    }
  });
});
