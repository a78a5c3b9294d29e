import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { precompiled } from '../../src/db/precompiled.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// Queries compiled once and filled with each call's arguments (the status endpoint's lookup), on
// PGlite and on PostgreSQL. The endpoint itself is covered over HTTP in account-status.test.ts.
const t = await buildTestApp();
const db = t.store.db;

describe('a precompiled query', () => {
  test('answers each call with its own arguments, an argument used twice and the query\'s own constants included', async () => {
    const a = await createTenant(t);
    const b = await createTenant(t);
    const find = precompiled(2, (qb, code: string, alsoCode: string) => qb.selectFrom('import_suppliers')
      .select(['code', sql<number>`${41}::int + 1`.as('constant')])
      .where('code', '=', code)
      .where((eb) => eb.or([eb('code', '=', alsoCode), eb('code', '=', code)])));
    assert.deepEqual(await find(db, a.supplier, a.supplier), [{ code: a.supplier, constant: 42 }]);
    assert.deepEqual(await find(db, b.supplier, b.supplier), [{ code: b.supplier, constant: 42 }]);
    assert.deepEqual(await find(db, a.supplier, b.supplier), [{ code: a.supplier, constant: 42 }]);
    assert.deepEqual(await find(db, 'NO-SUCH-SUPPLIER', 'NO-SUCH-SUPPLIER'), []);
  });

  test('runs inside a transaction given as the executor', async () => {
    const tenant = await createTenant(t);
    const find = precompiled(1, (qb, code: string) => qb.selectFrom('import_suppliers').select('status').where('code', '=', code));
    const seen = await db.transaction().execute(async (trx) => {
      await trx.updateTable('import_suppliers').set({ status: 'paused' }).where('code', '=', tenant.supplier).execute();
      const rows = await find(trx, tenant.supplier);
      await trx.updateTable('import_suppliers').set({ status: 'ongoing' }).where('code', '=', tenant.supplier).execute();
      return rows;
    });
    assert.deepEqual(seen, [{ status: 'paused' }]);
  });

  test('refuses, when defined, a query that computes with an argument instead of passing it', () => {
    assert.throws(() => precompiled(1, (qb, code: string) => qb.selectFrom('import_suppliers').select('id').where('code', '=', `${code}-X`)),
      /argument 0 does not reach the query as a parameter/);
  });
});
