import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { stageAndCreate } from '../support/imports.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp({ DOCUMENTS_BUCKET: 's3://test-bucket' });
const readUrl = (tenant: Tenant, ext: string) => `/v1/data-import/accounts/${tenant.supplier}/${encodeURIComponent(ext)}/`;
const read = (tenant: Tenant, ext: string) => call(t.app, 'GET', readUrl(tenant, ext), { token: tenant.token });
const body = (tenant: Tenant, ext: string, extra: Record<string, unknown>) =>
  ({ import_supplier: tenant.supplier, external_account_number: ext, ...extra });

function postTransactions(tenant: Tenant, ext: string, transactions: unknown[]) {
  return call(t.app, 'POST', '/v1/data-import/transactions/create/', { token: tenant.token, body: body(tenant, ext, { transactions }) });
}
const tx = (id: string, type: string, amount: number, extra: Record<string, unknown> = {}) =>
  ({ transaction_id: id, transaction_date: '2024-05-01', amount, type, ...(type === 'SUPPLY_CHARGE' ? {} : { reason: 'IMPORTED_CHARGE' }), ...extra });

describe('GET accounts/<supplier>/<external number>/', () => {
  test('shows the created account: number, team, billing address, customers, supply points with counts', async () => {
    const tenant = await createTenant(t);
    const { payload, number } = await stageAndCreate(t, tenant);
    const res = await read(tenant, payload.external_account_number);
    assert.equal(res.status, 200, res.body);
    const view = res.json;
    assert.equal(view.service_account_number, number);
    assert.equal(view.external_account_number, payload.external_account_number);
    assert.equal(view.import_supplier, tenant.supplier);
    assert.equal(view.operations_team, tenant.team);
    assert.match(view.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.deepEqual(view.billing_address, {
      street_address: payload.billing_address.street_address, locality: payload.billing_address.locality ?? null,
      administrative_area: payload.billing_address.administrative_area ?? null,
      country: payload.billing_address.country, postal_code: payload.billing_address.postal_code,
    });
    assert.deepEqual(view.customers.map((c: any) => [c.given_name, c.family_name]), payload.customers.map((c) => [c.given_name, c.family_name]));
    assert.deepEqual(view.supply_addresses.map((a: any) => [a.supply_address1, a.supply_postcode, a.supply_points.length]),
      payload.supply_addresses.map((a) => [a.supply_address1, a.supply_postcode, a.supply_points.length]));
    const sentPoint = payload.supply_addresses[0]!.supply_points[0] as any;
    const shownPoint = view.supply_addresses[0].supply_points[0];
    assert.deepEqual(shownPoint, {
      supply_type: sentPoint.supply_type, identifier: sentPoint.identifier ?? null, supply_start_date: sentPoint.supply_start_date,
      last_billed_to_date: sentPoint.last_billed_to_date ?? null, agreements_count: (sentPoint.agreements ?? []).length,
      meters_count: (sentPoint.meters ?? []).length,
      registers_count: (sentPoint.meters ?? []).reduce((n: number, m: any) => n + m.registers.length, 0),
    });
    assert.equal(view.balance, '0.00');
    assert.equal(view.transactions_count, 0);
    assert.deepEqual(view.statements, []);
    assert.equal(view.open_statement_period_from, null);
    assert.equal(view.payment_instruction, null);
  });

  test('reflects each import: balance summed exactly, notes, pins with document locations, statements, payment instruction', async () => {
    const root = `roots/${unique('r')}`;
    const tenant = await createTenant(t, { documentsRoot: root });
    const account = await insertImportedAccount(t, tenant);
    const ext = account.externalAccountNumber;

    assert.equal((await postTransactions(tenant, ext, [tx('C1', 'CREDIT', 0.1), tx('C2', 'CREDIT', 0.2)])).status, 201);
    let view = (await read(tenant, ext)).json;
    assert.equal(view.balance, '0.30', '0.1 + 0.2 is exactly 0.30');
    assert.equal(view.transactions_count, 2);
    await postTransactions(tenant, ext, [tx('P1', 'PAYMENT', 10), tx('CH1', 'CHARGE', 7.15), tx('S1', 'SUPPLY_CHARGE', 3.05), tx('R1', 'REPAYMENT', 1.1)]);
    view = (await read(tenant, ext)).json;
    assert.equal(view.balance, '-1.00', '0.30 + 10 - 7.15 - 3.05 - 1.10');

    const notes = await call(t.app, 'POST', '/v1/data-import/notes/create/', { token: tenant.token, body: body(tenant, ext, { notes: [
      { body: 'Plain note' },
      { body: 'Pinned', is_pinned: true, created_at: '2024-01-02T03:04:05Z', document_paths: [{ document_path: 'letters/welcome.pdf' }] },
      { body: 'Pin expired', is_pinned: true, unpin_at: '2020-01-01T00:00:00Z' },
      { body: 'Pinned for a while', is_pinned: true, unpin_at: '2099-01-01T00:00:00Z', created_at: '2024-01-01T00:00:00Z' },
    ] }) });
    assert.equal(notes.status, 201);
    view = (await read(tenant, ext)).json;
    assert.equal(view.notes_count, 4);
    assert.deepEqual(view.pinned_notes, [
      { created_at: '2024-01-02T03:04:05Z', body: 'Pinned', unpin_at: null, documents: [{ document_path: 'letters/welcome.pdf', location: `s3://test-bucket/${root}/letters/welcome.pdf` }] },
      { created_at: '2024-01-01T00:00:00Z', body: 'Pinned for a while', unpin_at: '2099-01-01T00:00:00Z', documents: [] },
    ]);

    const statements = await call(t.app, 'POST', '/v1/data-import/historical-statements/create/', { token: tenant.token, body: body(tenant, ext, { statements: [
      { statement_id: 'ST1', bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', issued_date: '2024-02-03', number: '0001', gross_amount: 45.5, statement_path: 'statements/2024-01.pdf' },
      { statement_id: 'ST2', bill_period_from_date: '2024-02-01', bill_period_to_date: '2024-02-29', issued_date: '2024-03-03', number: '0002', gross_amount: 12 },
    ] }) });
    assert.equal(statements.status, 201);
    view = (await read(tenant, ext)).json;
    assert.equal(view.open_statement_period_from, '2024-03-01');
    assert.deepEqual(view.statements, [
      { statement_id: 'ST1', bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', issued_date: '2024-02-03', number: '0001', gross_amount: '45.50',
        document: { document_path: 'statements/2024-01.pdf', location: `s3://test-bucket/${root}/statements/2024-01.pdf` } },
      { statement_id: 'ST2', bill_period_from_date: '2024-02-01', bill_period_to_date: '2024-02-29', issued_date: '2024-03-03', number: '0002', gross_amount: '12.00', document: null },
    ]);

    const vendor = unique('vendor');
    await admin.createVendor(t.store.db, vendor, { kind: 'http', url: 'http://127.0.0.1:9' });
    const vendorRow = await t.store.db.selectFrom('payment_vendors').select('id').where('code', '=', vendor).executeTakeFirstOrThrow();
    await t.store.db.insertInto('payment_instructions').values({
      account_id: account.accountId, vendor_id: vendorRow.id, reference: 'pm_1', type: 'CARD', status: 'active', details: JSON.stringify({ brand: 'visa', last4: '4242' }),
    }).execute();
    view = (await read(tenant, ext)).json;
    assert.deepEqual({ ...view.payment_instruction, created_at: undefined }, {
      vendor, reference: 'pm_1', type: 'CARD', status: 'active', details: { brand: 'visa', last4: '4242' }, created_at: undefined,
    });
  });

  test('404 account_not_found: unknown account, staged only, unknown or another organisation\'s supplier', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    const staged = await insertStagedOnly(t, tenant);
    const other = await createTenant(t);
    const cases = [
      await read(tenant, 'NOPE'),
      await read(tenant, staged),
      await call(t.app, 'GET', `/v1/data-import/accounts/NO-SUCH-SUPPLIER/${account.externalAccountNumber}/`, { token: tenant.token }),
      await call(t.app, 'GET', readUrl(tenant, account.externalAccountNumber), { token: other.token }),
    ];
    for (const res of cases) {
      assert.equal(res.status, 404);
      assert.deepEqual(Object.keys(res.json).sort(), ['code', 'detail']);
      assert.equal(res.json.code, 'account_not_found');
    }
    assert.equal((await read(tenant, account.externalAccountNumber)).status, 200);
    assert.equal((await call(t.app, 'GET', readUrl(tenant, account.externalAccountNumber))).status, 401);
  });
});
