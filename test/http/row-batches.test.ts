import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_BIND_PARAMETERS, rowBatches } from '../../src/db/row-batches.ts';
import { insertCustomers } from '../../src/modules/account-imports/account-tree.repository.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// An account's rows go in as multi-row INSERTs; past the bind-parameter limit they are batched, by
// sizes derived from the rows' columns (account-tree.repository.ts), on PGlite and on PostgreSQL.
const t = await buildTestApp();

const rowsOf = (count: number, columns: number) =>
  Array.from({ length: count }, () => Object.fromEntries(Array.from({ length: columns }, (_, c) => [`c${c}`, c])));

describe('row batches under the bind-parameter limit', () => {
  test('a batch holds as many rows as fit 65535 parameters at the rows\' column count', () => {
    assert.equal(MAX_BIND_PARAMETERS, 65_535);
    assert.deepEqual(rowBatches(rowsOf(10_000, 12)).map((batch) => batch.length), [5_461, 4_539]);
    assert.deepEqual(rowBatches(rowsOf(10_000, 7)).map((batch) => batch.length), [9_362, 638]);
    assert.deepEqual(rowBatches(rowsOf(3, 7)).map((batch) => batch.length), [3]);
    assert.deepEqual(rowBatches([]), []);
  });

  test('a column set by only some rows counts for every row (the INSERT binds it for all)', () => {
    const rows = Array.from({ length: 40_000 }, (_, i) => (i % 2 === 0 ? { a: i } : { b: i }));
    assert.deepEqual(rowBatches(rows).map((batch) => batch.length), [32_767, 7_233]);
  });

  test('6,000 customers (72,000 parameters, more than one statement takes) are all written', async () => {
    const tenant = await createTenant(t);
    const { accountId } = await insertImportedAccount(t, tenant);
    const customers = Array.from({ length: 6_000 }, (_, position) => ({
      account_id: accountId, position, given_name: `Given ${position}`, family_name: 'Family', email: null, mobile: null,
      landline: null, alternative_phone_numbers: '[]', date_of_birth: null, opted_into_updates: null, opted_into_offers: null,
      opted_into_sms: null,
    }));
    await t.store.db.transaction().execute((trx) => insertCustomers(trx, customers));
    const written = await t.store.db.selectFrom('customers')
      .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.max('position').as('last')])
      .where('account_id', '=', accountId).executeTakeFirstOrThrow();
    assert.deepEqual(written, { count: 6_000, last: 5_999 });
  });
});
