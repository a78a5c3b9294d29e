import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { MAX_PER_CONNECTION, SERVER_PREPARED } from '../../src/db/server-prepared.ts';
import { insertAccountWithTree, type AccountTreeRows } from '../../src/modules/account-imports/index.ts';
import { newAccountRow } from '../support/accounts.ts';
import { PG_ONLY } from '../support/imports.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// Statements marked SERVER_PREPARED are prepared once per connection and keep a plan (PostgreSQL);
// on PGlite the mark is a comment and the same statements answer the same.
const t = await buildTestApp();
const db = t.store.db;

interface Prepared { statement: string; generic_plans: number; custom_plans: number }

describe('server-prepared statements', () => {
  test('a marked statement answers like any other, with each call\'s values', async () => {
    const twice = (n: number) => sql<{ n: number }>`${sql.raw(SERVER_PREPARED)} SELECT ${n}::int * 2 AS n`;
    for (const n of [1, 2, 3]) assert.deepEqual((await twice(n).execute(db)).rows, [{ n: n * 2 }]);
  });

  test('is prepared once on its connection and, after its first runs, executed without planning; an unmarked one is not kept', { skip: PG_ONLY && 'prepared statements belong to PostgreSQL sessions (set DATABASE_URL)' }, async () => {
    const seen = await db.connection().execute(async (conn) => {
      for (let n = 0; n < 8; n += 1) {
        await sql`${sql.raw(SERVER_PREPARED)} SELECT count(*)::int AS n FROM import_suppliers WHERE id > ${n}::int8`.execute(conn);
        await sql`SELECT count(*)::int AS unmarked FROM import_suppliers WHERE id > ${n}::int8`.execute(conn);
      }
      return (await sql<Prepared>`SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements`.execute(conn)).rows;
    });
    assert.ok(seen.every((row) => row.statement.startsWith(SERVER_PREPARED)), JSON.stringify(seen));
    const counted = seen.filter((row) => row.statement.includes('import_suppliers WHERE id >'));
    assert.equal(counted.length, 1, JSON.stringify(seen));
    // Planned for its first five runs, then a generic plan kept: the later runs are not planned.
    assert.equal(counted[0]!.custom_plans + counted[0]!.generic_plans, 8);
    assert.ok(counted[0]!.generic_plans >= 1, JSON.stringify(counted[0]));
  });

  test('the account tree\'s insert is one of them', { skip: PG_ONLY && 'prepared statements belong to PostgreSQL sessions (set DATABASE_URL)' }, async () => {
    const tenant = await createTenant(t);
    const empty: AccountTreeRows = { customers: [], addresses: [], points: [], agreements: [], meters: [], registers: [], readings: [], notes: [] };
    const held = await db.transaction().execute(async (trx) => {
      for (let i = 0; i < 2; i += 1) assert.ok(await insertAccountWithTree(trx, await newAccountRow(t, tenant), empty));
      return (await sql<Prepared>`SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements`.execute(trx)).rows;
    });
    const tree = held.filter((row) => row.statement.includes('customer_rows'));
    assert.equal(tree.length, 1, JSON.stringify(held.map((row) => row.statement.slice(0, 60))));
    assert.ok(tree[0]!.custom_plans + tree[0]!.generic_plans >= 2);
  });

  // Last: it fills its connection's allowance, and the pool may hand that connection to a later test.
  test('a connection prepares a bounded number of marked texts; past it they are sent unnamed and still answer', { skip: PG_ONLY && 'prepared statements belong to PostgreSQL sessions (set DATABASE_URL)' }, async () => {
    const texts = MAX_PER_CONNECTION + 6;
    const held = await db.connection().execute(async (conn) => {
      for (let i = 0; i < texts; i += 1) {
        const { rows } = await sql<{ n: number }>`${sql.raw(SERVER_PREPARED)} SELECT ${i}::int + ${sql.raw(String(i))} AS n /* cap ${sql.raw(String(i))} */`.execute(conn);
        assert.deepEqual(rows, [{ n: 2 * i }]);
      }
      return (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements`.execute(conn)).rows[0]!.n;
    });
    assert.equal(held, MAX_PER_CONNECTION);
  });
});
