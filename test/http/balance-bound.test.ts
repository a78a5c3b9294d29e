import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { insertImportedAccount } from '../support/accounts.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// Sums past the column (issue #14): 101 charges of the largest amount used to import fine and then
// make every read of the account a 500 (numeric overflow, 22003). An account's balance is bounded at
// import, and the read sums without casting to a narrower type, so stored data can always be read.
const t = await buildTestApp();
const MAX = 999_999_999_999.99;
const URL = '/v1/data-import/transactions/create/';
const readUrl = (tenant: Tenant, ext: string) => `/v1/data-import/accounts/${tenant.supplier}/${encodeURIComponent(ext)}/`;
const charges = (from: number, count: number, type = 'CHARGE') => Array.from({ length: count }, (_, i) =>
  ({ transaction_id: `T-${from + i}`, transaction_date: '2024-03-01', amount: MAX, type, reason: 'IMPORTED_CHARGE' }));
const post = (tenant: Tenant, ext: string, transactions: unknown[]) =>
  call(t.app, 'POST', URL, { token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: ext, transactions } });

describe('an account balance bounded at import, and reads that cannot overflow', () => {
  test('100 charges of the largest amount import; the 101st is refused with its code; the account still reads', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    for (let batch = 0; batch < 2; batch += 1) {
      const res = await post(tenant, account.externalAccountNumber, charges(batch * 50, 50));
      assert.equal(res.status, 201, res.body);
    }
    // A batch that crosses is refused whole, at the item that crosses: nothing of it is stored.
    const over = await post(tenant, account.externalAccountNumber, [...charges(200, 1, 'CREDIT'), ...charges(100, 2)]);
    const detail = 'Transaction "T-101" would take the account\'s balance to -100999999999998.99; an account\'s balance must stay within -99999999999999.99 and 99999999999999.99.';
    assert.equal(over.status, 400, over.body);
    assert.deepEqual(over.json, { detail, code: 'account_balance_out_of_range', errors: [{ detail, code: 'account_balance_out_of_range', attr: 'transactions.2.amount' }] });
    const count = await t.store.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).where('account_id', '=', account.accountId).executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 100);

    const read = await call(t.app, 'GET', readUrl(tenant, account.externalAccountNumber), { token: tenant.token });
    assert.equal(read.status, 200, read.body);
    assert.deepEqual([read.json.balance, read.json.transactions_count], ['-99999999999999.00', 100]);
    // Money coming back in moves the balance away from the bound: accepted.
    assert.equal((await post(tenant, account.externalAccountNumber, charges(300, 1, 'PAYMENT'))).status, 201);
  });

  test('transactions already on the account do not count again: at the bound, the same batch reposted answers already-existing', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    for (let batch = 0; batch < 2; batch += 1) assert.equal((await post(tenant, account.externalAccountNumber, charges(batch * 50, 50))).status, 201);
    // Summed again, these 50 would take the balance past the bound; they are already there, so they add nothing.
    const again = await post(tenant, account.externalAccountNumber, charges(50, 50));
    assert.equal(again.status, 201, again.body);
    assert.deepEqual(new Set(again.json.results.map((r: { status: string }) => r.status)), new Set(['TRANSACTION_ALREADY_EXISTS']));
    // One new charge beside them is summed alone from the kept balance, and crosses.
    const over = await post(tenant, account.externalAccountNumber, [...charges(0, 3), ...charges(100, 1)]);
    assert.equal(over.status, 400, over.body);
    assert.equal(over.json.errors[0].attr, 'transactions.3.amount');
    assert.match(over.json.detail, /balance to -100999999999998\.99/);
  });

  test('an account whose stored transactions sum past any bound (written before it) still reads: 200, exact balance', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    await t.store.db.insertInto('transactions').values(Array.from({ length: 120 }, (_, i) => ({
      account_id: account.accountId, transaction_id: `OLD-${i}`, transaction_date: '2024-01-01', amount: '999999999999.99', type: 'CHARGE', reason: 'IMPORTED_CHARGE',
    }))).execute();
    const read = await call(t.app, 'GET', readUrl(tenant, account.externalAccountNumber), { token: tenant.token });
    assert.equal(read.status, 200, read.body);
    assert.deepEqual([read.json.balance, read.json.transactions_count], ['-119999999999998.80', 120]);
  });

  test('the balance kept on the account follows every write of its transactions, and a refused batch moves nothing', async () => {
    const tenant = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    const db = t.store.db;
    const kept = async () => (await db.selectFrom('accounts').select('balance').where('id', '=', account.accountId).executeTakeFirstOrThrow()).balance;
    const summed = async () => (await db.selectFrom('transactions')
      .select(sql<string>`coalesce(sum(CASE WHEN type IN ('CREDIT', 'PAYMENT') THEN amount ELSE -amount END), 0)::text`.as('s'))
      .where('account_id', '=', account.accountId).executeTakeFirstOrThrow()).s;
    const small = (id: string, amount: number, type: string) => ({ transaction_id: id, transaction_date: '2024-03-01', amount, type, reason: 'IMPORTED_CHARGE' });

    assert.equal((await post(tenant, account.externalAccountNumber, [small('A', 10.25, 'CHARGE'), small('B', 4, 'PAYMENT')])).status, 201);
    assert.equal(Number(await kept()), -6.25);
    // Refused whole (the second item crosses the bound): neither the rows nor the balance move.
    assert.equal((await post(tenant, account.externalAccountNumber, [small('C', 1, 'CREDIT'), ...charges(0, 101)])).status, 400);
    assert.equal(Number(await kept()), -6.25);
    // Rows written, changed or removed by other means than an import move it too.
    await db.insertInto('transactions').values({ account_id: account.accountId, transaction_id: 'D', transaction_date: '2024-01-01', amount: '100.00', type: 'CREDIT', reason: 'IMPORTED_CHARGE' }).execute();
    await db.updateTable('transactions').set({ amount: '20.00' }).where('account_id', '=', account.accountId).where('transaction_id', '=', 'A').execute();
    await db.deleteFrom('transactions').where('account_id', '=', account.accountId).where('transaction_id', '=', 'B').execute();
    assert.equal(Number(await kept()), 80);
    assert.equal(Number(await kept()), Number(await summed()));
  });
});
