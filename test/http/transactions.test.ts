import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';
import * as admin from '../../src/modules/admin/index.ts';

const t = await buildTestApp();
const URL = '/v1/data-import/transactions/create/';

const charge = (id: string, extra: Record<string, unknown> = {}) =>
  ({ transaction_id: id, transaction_date: '2024-03-01', amount: 12.3, type: 'CHARGE', reason: 'IMPORTED_CHARGE', ...extra });

async function setup() {
  const tenant = await createTenant(t);
  const account = await insertImportedAccount(t, tenant);
  return { tenant, account };
}

function post(tenant: Tenant, external: string, transactions: unknown[], query = '') {
  return call(t.app, 'POST', `${URL}${query}`, {
    token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: external, transactions },
  });
}

async function storedRows(accountId: number) {
  return t.store.db.selectFrom('transactions').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

async function addStatement(accountId: number, from: string, to: string) {
  await t.store.db.insertInto('statements').values({
    account_id: accountId, statement_id: unique('S'), bill_period_from_date: from, bill_period_to_date: to,
    issued_date: to, number: '1', gross_amount: '10.00',
  }).execute();
}

describe('POST transactions/create/: each type', () => {
  test('every type with its own fields is added; amounts come back with two decimals', async () => {
    const { tenant, account } = await setup();
    const items = [
      charge('T-1', { display_note: 'Shown to the customer', note: 'Internal' }),
      { transaction_id: 'T-2', transaction_date: '2024-03-02', amount: 5, type: 'CREDIT', reason: 'GENERAL_CREDIT' },
      { transaction_id: 'T-3', transaction_date: '2024-03-03', amount: 40.05, type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', reference: 'DD-1', payment_type: 'DD_REGULAR_COLLECTION' },
      { transaction_id: 'T-4', transaction_date: '2024-03-04', amount: 0.01, type: 'REPAYMENT', reason: 'FULL_CREDIT_REFUND', reference: 'R-1', payment_type: 'DIRECT_CREDIT' },
      {
        transaction_id: 'T-5', transaction_date: '2024-03-05', amount: 99.99, type: 'SUPPLY_CHARGE', product_code: 'ELEC-STD',
        line_items: [{ rate_band: 'CONSUMPTION_STANDARD', start_date: '2024-02-01', end_date: '2024-02-29', number_of_units: 100.5, net_amount: 95.23, price_per_unit: 0.2845, units: [50, 50.5] }],
        tax_items: [{ amount: 4.76, tax_type: 'VAT', value_taxed: 95.23, rate: 0.05, unit_type: 'PROPORTION' }],
      },
    ];
    const res = await post(tenant, account.externalAccountNumber, items);
    assert.equal(res.status, 201, res.body);
    assert.deepEqual(res.json.results.map((r: any) => [r.status, r.transaction_data.status, r.transaction_data.amount]), [
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_IMPORT_SUCCESS', '12.30'],
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_IMPORT_SUCCESS', '5.00'],
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_IMPORT_SUCCESS', '40.05'],
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_IMPORT_SUCCESS', '0.01'],
      ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_IMPORT_SUCCESS', '99.99'],
    ]);
    assert.deepEqual(res.json.results[0].transaction_data, {
      transaction_id: 'T-1', transaction_date: '2024-03-01', amount: '12.30', type: 'CHARGE', reason: 'IMPORTED_CHARGE',
      display_note: 'Shown to the customer', note: 'Internal', status: 'TRANSACTION_IMPORT_SUCCESS',
    });
    assert.deepEqual(res.json.results[4].transaction_data, { ...items[4], amount: '99.99', status: 'TRANSACTION_IMPORT_SUCCESS' });
    const rows = await storedRows(account.accountId);
    assert.deepEqual(rows.map((r) => [r.transaction_id, r.amount, r.type, r.reference, r.payment_type]), [
      ['T-1', '12.30', 'CHARGE', null, null], ['T-2', '5.00', 'CREDIT', null, null], ['T-3', '40.05', 'PAYMENT', 'DD-1', 'DD_REGULAR_COLLECTION'],
      ['T-4', '0.01', 'REPAYMENT', 'R-1', 'DIRECT_CREDIT'], ['T-5', '99.99', 'SUPPLY_CHARGE', null, null],
    ]);
    // An added transaction is answered as it is stored: a repeat, read back from the store, answers the same.
    const again = await post(tenant, account.externalAccountNumber, items);
    assert.deepEqual(again.json.results.map((r: any) => r.status), items.map(() => 'TRANSACTION_ALREADY_EXISTS'));
    assert.deepEqual(again.json.results.map((r: any) => r.transaction_data),
      res.json.results.map(({ transaction_data: { status: _, ...data } }: any) => data));
  });

  test('a field of another type is an unknown_field; missing reason is required; an unknown type is invalid_choice', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [
      charge('A', { reference: 'X' }),
      { transaction_id: 'B', transaction_date: '2024-01-01', amount: 1, type: 'SUPPLY_CHARGE', reason: 'IMPORTED_CHARGE' },
      { transaction_id: 'C', transaction_date: '2024-01-01', amount: 1, type: 'CREDIT' },
      { transaction_id: 'D', transaction_date: '2024-01-01', amount: 1, type: 'REFUND', reason: 'IMPORTED_CHARGE' },
      { transaction_id: 'E', transaction_date: '2024-01-01', amount: 1, type: 'PAYMENT', reason: 'NOPE', payment_type: 'CASH', product_code: 'P' },
    ]);
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'invalid');
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code]), [
      ['transactions.0.reference', 'unknown_field'],
      ['transactions.1.reason', 'unknown_field'],
      ['transactions.2.reason', 'required'],
      ['transactions.3.type', 'invalid_choice'],
      ['transactions.4.reason', 'invalid_choice'],
      ['transactions.4.payment_type', 'invalid_choice'],
      ['transactions.4.product_code', 'unknown_field'],
    ]);
    assert.equal((await storedRows(account.accountId)).length, 0);
  });

  test('amounts: positive, at most two decimals, bounded; dates real; line item start <= end', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [
      charge('A', { amount: 1.005 }),
      charge('B', { amount: 0 }),
      charge('C', { amount: -5 }),
      charge('D', { amount: '12.30' }),
      charge('E', { amount: 1e13 }),
      charge('F', { transaction_date: '2023-02-30' }),
      { transaction_id: 'G', transaction_date: '2024-01-01', amount: 1, type: 'SUPPLY_CHARGE',
        line_items: [{ rate_band: 'R', start_date: '2024-02-01', end_date: '2024-01-31', number_of_units: 1, net_amount: 1, price_per_unit: 1 }] },
    ]);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code]), [
      ['transactions.0.amount', 'invalid'],
      ['transactions.1.amount', 'min_value'],
      ['transactions.2.amount', 'min_value'],
      ['transactions.3.amount', 'invalid'],
      ['transactions.4.amount', 'max_value'],
      ['transactions.5.transaction_date', 'invalid'],
      ['transactions.6.line_items.0.end_date', 'invalid_date_range'],
    ]);
  });

  test('a transaction_id twice in one batch is a duplicate at the second', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [charge('A'), charge('B'), charge('A')]);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: 'The request failed validation.', code: 'invalid',
      errors: [{ attr: 'transactions.2.transaction_id', code: 'duplicate', detail: res.json.errors[0].detail }],
    });
  });

  test('query booleans are validated', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [charge('A')], '?check_previously_added=perhaps');
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: 'The request failed validation.', code: 'invalid',
      errors: [{ detail: 'Expected a boolean.', code: 'invalid', attr: 'check_previously_added' }],
    });
  });

  test('query booleans accept true/false/True/False/TRUE/FALSE/1/0', async () => {
    const { tenant, account } = await setup();
    await addStatement(account.accountId, '2024-01-01', '2024-03-31');
    // force_add_to_current_statement false refuses an early transaction; true moves it.
    for (const [spelling, status] of [['false', 400], ['False', 400], ['FALSE', 400], ['0', 400],
      ['true', 201], ['True', 201], ['TRUE', 201], ['1', 201]] as const) {
      const res = await post(tenant, account.externalAccountNumber, [charge(`E-${spelling}`)], `?force_add_to_current_statement=${spelling}`);
      assert.equal(res.status, status, spelling);
      if (status === 400) assert.equal(res.json.code, 'TRANSACTION_IMPORT_ERROR', spelling);
    }
  });
});

describe('POST transactions/create/: dedupe and all or nothing', () => {
  test('an exact repeat of a transaction_id is TRANSACTION_ALREADY_EXISTS and is not stored twice', async () => {
    const { tenant, account } = await setup();
    assert.equal((await post(tenant, account.externalAccountNumber, [charge('A')])).status, 201);
    const res = await post(tenant, account.externalAccountNumber, [charge('A'), charge('B')]);
    assert.equal(res.status, 201);
    assert.deepEqual(res.json.results, [
      { status: 'TRANSACTION_ALREADY_EXISTS', transaction_data: { transaction_id: 'A', transaction_date: '2024-03-01', amount: '12.30', type: 'CHARGE', reason: 'IMPORTED_CHARGE' } },
      { status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: { transaction_id: 'B', transaction_date: '2024-03-01', amount: '12.30', type: 'CHARGE', reason: 'IMPORTED_CHARGE', status: 'TRANSACTION_IMPORT_SUCCESS' } },
    ]);
    assert.deepEqual((await storedRows(account.accountId)).map((r) => [r.transaction_id, r.amount]), [['A', '12.30'], ['B', '12.30']]);
  });

  test('check_previously_added=false: a repeat fails the whole batch with TRANSACTION_IMPORT_ERROR', async () => {
    const { tenant, account } = await setup();
    await post(tenant, account.externalAccountNumber, [charge('A')]);
    const res = await post(tenant, account.externalAccountNumber, [charge('B'), charge('A', { amount: 7.5 })], '?check_previously_added=false');
    assert.equal(res.status, 400);
    const detail = 'Transaction "A" was added to this account before.';
    assert.deepEqual(res.json, {
      detail, code: 'TRANSACTION_IMPORT_ERROR', errors: [{ detail, code: 'TRANSACTION_IMPORT_ERROR', attr: 'transactions.1.transaction_id' }],
      status: 'TRANSACTION_IMPORT_ERROR', error_detail: detail,
      transaction_data: { ...charge('A'), amount: '7.50' },
    });
    assert.deepEqual((await storedRows(account.accountId)).map((r) => r.transaction_id), ['A']);
  });

  test('check_previously_added=false with new ids adds them', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [charge('A'), charge('B')], '?check_previously_added=false');
    assert.equal(res.status, 201);
    assert.equal((await storedRows(account.accountId)).length, 2);
  });
});

describe('POST transactions/create/: a transaction_id sent again with other content', () => {
  const CONFLICT = 'Items of this request were imported before with other content; only an exact repeat is accepted as already existing.';

  test('another amount: 400 conflict at its amount, the whole batch refused, the stored one kept', async () => {
    const { tenant, account } = await setup();
    assert.equal((await post(tenant, account.externalAccountNumber, [charge('SAME-1', { amount: 10 })])).status, 201);
    const res = await post(tenant, account.externalAccountNumber, [charge('NEW-1'), charge('SAME-1', { amount: 25.5 })]);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { detail: CONFLICT, code: 'conflict', errors: [
      { code: 'conflict', attr: 'transactions.1.amount', detail: 'Transaction "SAME-1" exists with amount 10.00; this request sends 25.50.' },
    ] });
    assert.deepEqual((await storedRows(account.accountId)).map((r) => [r.transaction_id, r.amount]), [['SAME-1', '10.00']]);
  });

  test('each differing field is named: date, type-specific fields, notes, line items (keys in any order are the same)', async () => {
    const { tenant, account } = await setup();
    const payment = { transaction_id: 'P-1', transaction_date: '2024-03-03', amount: 40.05, type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', reference: 'DD-1', payment_type: 'DD_REGULAR_COLLECTION' };
    const line = { rate_band: 'STANDARD', start_date: '2024-02-01', end_date: '2024-02-29', number_of_units: 100.5, net_amount: 95.23, price_per_unit: 0.2845 };
    const supply = { transaction_id: 'SC-1', transaction_date: '2024-03-05', amount: 99.99, type: 'SUPPLY_CHARGE', line_items: [line] };
    assert.equal((await post(tenant, account.externalAccountNumber, [payment, supply, charge('C-1')])).status, 201);

    const reordered = { ...supply, line_items: [Object.fromEntries(Object.entries(line).reverse())] };
    const again = await post(tenant, account.externalAccountNumber, [payment, reordered, charge('C-1', { amount: 12.30 })]);
    assert.equal(again.status, 201, again.body);
    assert.deepEqual(again.json.results.map((r: any) => r.status), Array(3).fill('TRANSACTION_ALREADY_EXISTS'));

    const res = await post(tenant, account.externalAccountNumber, [
      { ...payment, transaction_date: '2024-03-04', reference: 'DD-2', payment_type: undefined },
      { ...supply, line_items: [{ ...line, net_amount: 95.24 }] },
      charge('C-1', { note: 'Added later' }),
    ]);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { detail: CONFLICT, code: 'conflict', errors: [
      { code: 'conflict', attr: 'transactions.0.transaction_date', detail: 'Transaction "P-1" exists with transaction_date 2024-03-03; this request sends 2024-03-04.' },
      { code: 'conflict', attr: 'transactions.0.reference', detail: 'Transaction "P-1" exists with reference DD-1; this request sends DD-2.' },
      { code: 'conflict', attr: 'transactions.0.payment_type', detail: 'Transaction "P-1" exists with payment_type DD_REGULAR_COLLECTION; this request sends none.' },
      { code: 'conflict', attr: 'transactions.1.line_items', detail: 'Transaction "SC-1" exists with other line_items than this request sends.' },
      { code: 'conflict', attr: 'transactions.2.note', detail: 'Transaction "C-1" exists without note; this request sends "Added later".' },
    ] });
    assert.equal((await storedRows(account.accountId)).length, 3);
  });

  test('a transaction moved into the open period repeats with the date it was sent with', async () => {
    const { tenant, account } = await setup();
    await addStatement(account.accountId, '2024-01-01', '2024-01-31');
    const old = charge('OLD', { transaction_date: '2024-01-15' });
    assert.equal((await post(tenant, account.externalAccountNumber, [old])).status, 201);
    const again = await post(tenant, account.externalAccountNumber, [old]);
    assert.equal(again.status, 201);
    assert.equal(again.json.results[0].status, 'TRANSACTION_ALREADY_EXISTS');
    const moved = await post(tenant, account.externalAccountNumber, [{ ...old, transaction_date: '2024-02-01' }]);
    assert.deepEqual(moved.json.errors, [{ code: 'conflict', attr: 'transactions.0.transaction_date',
      detail: 'Transaction "OLD" exists with transaction_date 2024-01-15; this request sends 2024-02-01.' }]);
  });
});

describe('POST transactions/create/: the open statement period (D8)', () => {
  test('forced (default): moved to the first day, original date kept, described, one pinned note', async () => {
    const { tenant, account } = await setup();
    await addStatement(account.accountId, '2024-01-01', '2024-01-31');
    const res = await post(tenant, account.externalAccountNumber, [
      charge('OLD-1', { transaction_date: '2024-01-15' }), charge('OLD-2', { transaction_date: '2023-12-01' }), charge('NEW', { transaction_date: '2024-02-01' }),
    ]);
    assert.equal(res.status, 201, res.body);
    const [old1, , fresh] = res.json.results.map((r: any) => r.transaction_data);
    assert.equal(old1.transaction_date, '2024-02-01');
    assert.equal(old1.original_date, '2024-01-15');
    assert.match(old1.description, /2024-01-15.*2024-02-01/);
    assert.equal(fresh.transaction_date, '2024-02-01');
    assert.equal(fresh.original_date, undefined);
    assert.equal(fresh.description, undefined);
    const notes = await t.store.db.selectFrom('notes').selectAll().where('account_id', '=', account.accountId).execute();
    assert.equal(notes.length, 1);
    assert.equal(notes[0]!.is_pinned, true);
    assert.match(notes[0]!.body!, /OLD-1 \(2024-01-15\), OLD-2 \(2023-12-01\)/);
  });

  test('unforced: the batch fails at the first out-of-period transaction and leaves nothing behind', async () => {
    const { tenant, account } = await setup();
    await addStatement(account.accountId, '2024-01-01', '2024-01-31');
    const res = await post(tenant, account.externalAccountNumber, [
      charge('NEW', { transaction_date: '2024-02-03' }), charge('OLD', { transaction_date: '2024-01-31', amount: 3.1 }), charge('OLDER', { transaction_date: '2023-01-01' }),
    ], '?force_add_to_current_statement=false');
    assert.equal(res.status, 400);
    const detail = 'Transaction "OLD" is dated 2024-01-31, before the open statement period, which starts 2024-02-01.';
    assert.deepEqual(res.json, {
      detail, code: 'TRANSACTION_IMPORT_ERROR', errors: [{ detail, code: 'TRANSACTION_IMPORT_ERROR', attr: 'transactions.1.transaction_date' }],
      status: 'TRANSACTION_IMPORT_ERROR', error_detail: detail,
      transaction_data: { ...charge('OLD', { transaction_date: '2024-01-31' }), amount: '3.10' },
    });
    assert.equal((await storedRows(account.accountId)).length, 0);
    assert.equal((await t.store.db.selectFrom('notes').select('id').where('account_id', '=', account.accountId).execute()).length, 0);
  });

  test('without statements the period is open from the start', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [charge('A', { transaction_date: '1990-01-01' })], '?force_add_to_current_statement=false');
    assert.equal(res.status, 201);
    assert.equal(res.json.results[0].transaction_data.transaction_date, '1990-01-01');
  });
});

describe('POST transactions/create/: supplier and account', () => {
  test('unknown, staged-only and foreign accounts', async () => {
    const { tenant } = await setup();
    const missing = await post(tenant, 'NOPE', [charge('A')]);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json, {
      detail: 'No imported account "NOPE" for this import supplier.', code: 'account_not_found',
      errors: [{ detail: 'No imported account "NOPE" for this import supplier.', code: 'account_not_found', attr: 'external_account_number' }],
    });
    const staged = await insertStagedOnly(t, tenant);
    const stagedRes = await post(tenant, staged, [charge('A')]);
    assert.equal(stagedRes.status, 404);
    assert.equal(stagedRes.json.code, 'account_not_found');

    const other = await createTenant(t);
    const foreign = await call(t.app, 'POST', URL, {
      token: other.token, body: { import_supplier: tenant.supplier, external_account_number: staged, transactions: [charge('A')] },
    });
    assert.equal(foreign.status, 400);
    const detail = `No import supplier with code "${tenant.supplier}".`;
    assert.deepEqual(foreign.json, {
      detail, code: 'import_supplier_not_found', errors: [{ detail, code: 'import_supplier_not_found', attr: 'import_supplier' }],
    });
  });

  test('a paused or complete supplier still takes transactions (D6)', async () => {
    const { tenant, account } = await setup();
    await admin.setSupplier(t.store.db, tenant.supplier, { status: 'complete' });
    await t.directory.sync();
    const res = await post(tenant, account.externalAccountNumber, [charge('A')]);
    assert.equal(res.status, 201);
  });

  test('ten identical batches at once add each transaction once', async () => {
    const { tenant, account } = await setup();
    const batch = Array.from({ length: 20 }, (_, i) => charge(`C-${i}`));
    const results = await Promise.all(Array.from({ length: 10 }, () => post(tenant, account.externalAccountNumber, batch)));
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(201));
    const added = results.flatMap((r) => r.json.results).filter((r: any) => r.status === 'TRANSACTION_ADDED_TO_ACCOUNT');
    assert.equal(added.length, 20);
    assert.equal((await storedRows(account.accountId)).length, 20);
  });
});
