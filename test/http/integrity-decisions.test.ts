import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { processAccount, stage, stageAndCreate } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// The three questions issue #14 left open, decided (docs/validation.md, docs/imported-data.md) and
// pinned here: electricity identifiers are global; a statement imported after transactions inside
// its period closes that period around them; an account marked to skip is not pending.
const t = await buildTestApp();
const db = t.store.db;

describe('electricity identifiers are global', () => {
  test('an identifier live on another organisation\'s account: supply_point_already_registered, naming nothing of theirs', async () => {
    const theirs = await createTenant(t);
    const { payload: first, number: theirNumber } = await stageAndCreate(t, theirs);
    const mine = await createTenant(t);
    const second = accountPayload(mine.supplier);
    const taken = first.supply_addresses[1]!.supply_points[0]!;
    const point = second.supply_addresses[1]!.supply_points[0]!;
    assert.ok(taken.supply_type === 'ELECTRICITY' && point.supply_type === 'ELECTRICITY');
    point.identifier = taken.identifier;
    await stage(t, mine, second);
    const res = await processAccount(t, mine, second.external_account_number);
    const detail = `Supply point identifier "${taken.identifier}" is already registered on another account.`;
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { detail, code: 'supply_point_already_registered', errors: [{ detail, code: 'supply_point_already_registered', attr: 'supply_addresses.1.supply_points.0.identifier' }] });
    for (const secret of [theirNumber, theirs.supplier, first.external_account_number]) assert.equal(res.body.includes(secret), false, secret);
  });
});

describe('a statement imported after transactions inside its period', () => {
  const post = (tenant: Tenant, ext: string, path: string, body: Record<string, unknown>, query = '') =>
    call(t.app, 'POST', `/v1/data-import/${path}/create/${query}`, { token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: ext, ...body } });
  const charge = (id: string, date: string) => ({ transaction_id: id, transaction_date: date, amount: 10, type: 'CHARGE', reason: 'IMPORTED_CHARGE' });

  test('is accepted and closes the period: the transactions stay as imported, later ones dated inside it follow the open-period rule', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    assert.equal((await post(tenant, account.externalAccountNumber, 'transactions', { transactions: [charge('T-1', '2024-03-10'), charge('T-2', '2024-04-02')] })).status, 201);
    const statement = { bill_period_from_date: '2024-03-01', bill_period_to_date: '2024-03-31', statement_id: 'S-1', issued_date: '2024-04-01', number: 'No-1', gross_amount: 10 };
    const res = await post(tenant, account.externalAccountNumber, 'historical-statements', { statements: [statement] });
    assert.equal(res.status, 201, res.body);

    const rows = await db.selectFrom('transactions').select(['transaction_id', 'transaction_date', 'original_date', 'description'])
      .where('account_id', '=', account.accountId).orderBy('transaction_id').execute();
    assert.deepEqual(rows, [
      { transaction_id: 'T-1', transaction_date: '2024-03-10', original_date: null, description: null },
      { transaction_id: 'T-2', transaction_date: '2024-04-02', original_date: null, description: null },
    ]);
    const read = await call(t.app, 'GET', `/v1/data-import/accounts/${tenant.supplier}/${account.externalAccountNumber}/`, { token: tenant.token });
    assert.deepEqual([read.json.balance, read.json.transactions_count, read.json.open_statement_period_from], ['-20.00', 2, '2024-04-01']);

    const late = await post(tenant, account.externalAccountNumber, 'transactions', { transactions: [charge('T-3', '2024-03-15')] }, '?force_add_to_current_statement=false');
    assert.equal(late.status, 400);
    assert.equal(late.json.code, 'TRANSACTION_IMPORT_ERROR');
    assert.equal(late.json.detail, 'Transaction "T-3" is dated 2024-03-15, before the open statement period, which starts 2024-04-01.');
  });
});

describe('an account marked to skip is not pending', () => {
  const list = (tenant: Tenant, kind: string) =>
    call(t.app, 'GET', `/v1/data-import/${kind}-account-import-processes/${tenant.supplier}/`, { token: tenant.token });

  test('pending leaves it out; all still lists it, with no account; imported does not', async () => {
    const tenant = await createTenant(t);
    const kept = await stage(t, tenant);
    const skipped = await stage(t, tenant);
    await admin.skipAccount(db, tenant.supplier, skipped.external_account_number);
    const record = (ext: string) => ({ external_account_number: ext, service_account_number: null, account_created_at: null });

    assert.deepEqual((await list(tenant, 'pending')).json, [record(kept.external_account_number)]);
    assert.deepEqual((await list(tenant, 'all')).json, [record(kept.external_account_number), record(skipped.external_account_number)]);
    assert.deepEqual((await list(tenant, 'imported')).json, []);
    const create = await processAccount(t, tenant, skipped.external_account_number);
    assert.deepEqual([create.status, create.json.code], [400, 'account_marked_to_skip']);
  });
});
