import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp();
const URL = '/v1/data-import/historical-statements/create/';

const statement = (id: string, from: string, to: string, extra: Record<string, unknown> = {}) => ({
  bill_period_from_date: from, bill_period_to_date: to, statement_id: id, issued_date: to, number: `No-${id}`,
  gross_amount: 120.5, statement_path: `statements/${id}.pdf`, ...extra,
});

async function setup() {
  const tenant = await createTenant(t);
  const account = await insertImportedAccount(t, tenant);
  return { tenant, account };
}

function post(tenant: Tenant, external: string, statements: unknown[]) {
  return call(t.app, 'POST', URL, { token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: external, statements } });
}

function stored(accountId: number) {
  return t.store.db.selectFrom('statements').select(['statement_id', 'bill_period_from_date', 'bill_period_to_date', 'gross_amount', 'statement_path'])
    .where('account_id', '=', accountId).orderBy('bill_period_from_date').execute();
}

describe('POST historical-statements/create/', () => {
  test('201 with the validated data; stored with exact amounts and relative paths', async () => {
    const { tenant, account } = await setup();
    const body = {
      import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber,
      statements: [statement('S1', '2024-01-01', '2024-01-31'), statement('S2', '2024-02-01', '2024-02-29', { gross_amount: -0.1 })],
    };
    const res = await call(t.app, 'POST', URL, { token: tenant.token, body });
    assert.equal(res.status, 201, res.body);
    assert.deepEqual(res.json, body);
    assert.deepEqual(await stored(account.accountId), [
      { statement_id: 'S1', bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', gross_amount: '120.50', statement_path: 'statements/S1.pdf' },
      { statement_id: 'S2', bill_period_from_date: '2024-02-01', bill_period_to_date: '2024-02-29', gross_amount: '-0.10', statement_path: 'statements/S2.pdf' },
    ]);
  });

  test('idempotent by statement_id: the same statement again changes nothing; other data is 400 conflict at each differing field', async () => {
    const { tenant, account } = await setup();
    const s1 = statement('S1', '2024-01-01', '2024-01-31');
    assert.equal((await post(tenant, account.externalAccountNumber, [s1])).status, 201);
    const again = await post(tenant, account.externalAccountNumber, [{ ...s1, gross_amount: 120.50 }, statement('S2', '2024-02-01', '2024-02-29')]);
    assert.equal(again.status, 201);
    assert.equal((await stored(account.accountId)).length, 2);

    const changed = await post(tenant, account.externalAccountNumber, [
      { ...s1, gross_amount: 99, number: 'No-S1 (reissued)', statement_path: undefined }, statement('S3', '2024-03-01', '2024-03-31'),
    ]);
    assert.equal(changed.status, 400);
    assert.deepEqual(changed.json, {
      detail: 'Items of this request were imported before with other content; only an exact repeat is accepted as already existing.',
      code: 'conflict',
      errors: [
        { code: 'conflict', attr: 'statements.0.number', detail: 'Statement "S1" exists with number No-S1; this request sends "No-S1 (reissued)".' },
        { code: 'conflict', attr: 'statements.0.gross_amount', detail: 'Statement "S1" exists with gross_amount 120.50; this request sends 99.00.' },
        { code: 'conflict', attr: 'statements.0.statement_path', detail: 'Statement "S1" exists with statement_path "statements/S1.pdf"; this request sends none.' },
      ],
    });
    assert.equal((await stored(account.accountId)).length, 2, 'all or nothing: S3 is not stored');
  });

  test('a conflict beside an overlap: conflict, with both items', async () => {
    const { tenant, account } = await setup();
    const s1 = statement('S1', '2024-01-01', '2024-01-31');
    assert.equal((await post(tenant, account.externalAccountNumber, [s1])).status, 201);
    const res = await post(tenant, account.externalAccountNumber, [statement('S2', '2024-01-15', '2024-02-15'), { ...s1, issued_date: '2024-02-01' }]);
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'conflict');
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code]), [
      ['statements.0.bill_period_from_date', 'statement_period_overlap'],
      ['statements.1.issued_date', 'conflict'],
    ]);
  });

  test('overlapping periods, with stored statements or within the request, are statement_period_overlap', async () => {
    const { tenant, account } = await setup();
    await post(tenant, account.externalAccountNumber, [statement('S1', '2024-01-01', '2024-01-31')]);
    const res = await post(tenant, account.externalAccountNumber, [
      statement('S2', '2024-02-01', '2024-02-29'),
      statement('S3', '2024-01-31', '2024-01-31'),
      statement('S4', '2024-02-15', '2024-03-15'),
    ]);
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'statement_period_overlap');
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code]), [
      ['statements.1.bill_period_from_date', 'statement_period_overlap'],
      ['statements.2.bill_period_from_date', 'statement_period_overlap'],
    ]);
    assert.match(res.json.errors[0].detail, /overlaps statement "S1"/);
    assert.match(res.json.errors[1].detail, /overlaps statement "S2"/);
    assert.equal(res.json.detail, res.json.errors[0].detail);
    assert.equal((await stored(account.accountId)).length, 1);
  });

  test('validation: date range, decimals, document path, duplicates in the request, required fields', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [
      statement('A', '2024-02-01', '2024-01-31'),
      statement('B', '2024-03-01', '2024-03-31', { gross_amount: 1.234, statement_path: '../etc/passwd' }),
      statement('A', '2024-04-01', '2024-04-30'),
      { statement_id: 'C', bill_period_from_date: '2024-05-01', bill_period_to_date: '2024-05-31', gross_amount: '5' },
    ]);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code]), [
      ['statements.0.bill_period_to_date', 'invalid_date_range'],
      ['statements.1.gross_amount', 'invalid'],
      ['statements.1.statement_path', 'invalid_document_path'],
      ['statements.2.statement_id', 'duplicate'],
      ['statements.3.gross_amount', 'invalid'],
      ['statements.3.issued_date', 'required'],
      ['statements.3.number', 'required'],
    ]);
  });

  test('a statement is history: issued and its period ended by today (UTC); a later day is max_value, today passes', async () => {
    const { tenant, account } = await setup();
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const res = await post(tenant, account.externalAccountNumber, [
      statement('F1', '2100-12-01', '2100-12-31', { issued_date: '2024-01-02' }),
      statement('F2', '2024-01-01', '2024-01-31', { issued_date: tomorrow }),
    ]);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code, e.detail]), [
      ['statements.0.bill_period_to_date', 'max_value', 'Ensure this date is not in the future.'],
      ['statements.1.issued_date', 'max_value', 'Ensure this date is not in the future.'],
    ]);
    assert.deepEqual(await stored(account.accountId), []);
    // Nothing of the refused request was kept; a statement issued today for a period ending today passes.
    const ok = await post(tenant, account.externalAccountNumber, [statement('T', today, today)]);
    assert.equal(ok.status, 201, JSON.stringify(ok.json));
  });

  test('404 for unknown and staged-only accounts; foreign supplier; paused supplier still accepted', async () => {
    const { tenant, account } = await setup();
    const missing = await post(tenant, 'NOPE', [statement('S', '2024-01-01', '2024-01-31')]);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json.errors, [{ detail: missing.json.detail, code: 'account_not_found', attr: 'external_account_number' }]);
    assert.equal((await post(tenant, await insertStagedOnly(t, tenant), [statement('S', '2024-01-01', '2024-01-31')])).status, 404);

    const other = await createTenant(t);
    const foreign = await call(t.app, 'POST', URL, {
      token: other.token,
      body: { import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, statements: [statement('S', '2024-01-01', '2024-01-31')] },
    });
    assert.equal(foreign.status, 400);
    assert.equal(foreign.json.code, 'import_supplier_not_found');
    assert.equal(foreign.json.errors[0].attr, 'import_supplier');

    await admin.setSupplier(t.store.db, tenant.supplier, { status: 'complete' });
    await t.directory.sync();
    assert.equal((await post(tenant, account.externalAccountNumber, [statement('S', '2024-01-01', '2024-01-31')])).status, 201);
  });

  test('a statement closes the period: later transactions before its end are moved after it', async () => {
    const { tenant, account } = await setup();
    await post(tenant, account.externalAccountNumber, [statement('S1', '2024-01-01', '2024-01-31'), statement('S0', '2023-12-01', '2023-12-31')]);
    const res = await call(t.app, 'POST', '/v1/data-import/transactions/create/?force_add_to_current_statement=false', {
      token: tenant.token,
      body: { import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, transactions: [
        { transaction_id: 'T', transaction_date: '2024-01-20', amount: 1, type: 'CHARGE', reason: 'IMPORTED_CHARGE' },
      ] },
    });
    assert.equal(res.status, 400);
    assert.match(res.json.error_detail, /starts 2024-02-01/);
  });
});
