import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { STREAM_CHUNK_ROWS } from '../../src/modules/account-imports/index.ts';
import { processAccount, stage, supplierIdOf } from '../support/imports.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp();
const db = t.store.db;
const KINDS = ['all', 'pending', 'imported'] as const;

const list = (tenant: Tenant, kind: string, query = '', supplier = tenant.supplier) =>
  call(t.app, 'GET', `/v1/data-import/${kind}-account-import-processes/${encodeURIComponent(supplier)}/${query}`, { token: tenant.token });

/** Three staged accounts, the middle one created; a and c share a staging time, so c sorts by number. */
async function threeAccounts(tenant: Tenant) {
  const [a, b, c] = [await stage(t, tenant), await stage(t, tenant), await stage(t, tenant)];
  const created = await processAccount(t, tenant, b.external_account_number);
  assert.equal(created.status, 201);
  const supplierId = await supplierIdOf(t, tenant.supplier);
  // a and c: one staging time, one microsecond after b's (so the keyset must compare microseconds).
  const bRow = await db.selectFrom('account_imports').select(sql<string>`staged_at::text`.as('at'))
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', b.external_account_number).executeTakeFirstOrThrow();
  await db.updateTable('account_imports').set({ staged_at: sql`${bRow.at}::timestamptz - interval '1 microsecond'` })
    .where('supplier_id', '=', supplierId).where('external_account_number', 'in', [a.external_account_number, c.external_account_number]).execute();
  const account = await db.selectFrom('accounts').select('created_at').where('number', '=', created.json.service_account_number).executeTakeFirstOrThrow();
  const [first, second] = [a, c].map((p) => p.external_account_number).sort();
  const pending = (ext: string) => ({ external_account_number: ext, service_account_number: null, account_created_at: null });
  return {
    pending: [pending(first!), pending(second!)],
    imported: [{
      external_account_number: b.external_account_number,
      service_account_number: created.json.service_account_number,
      account_created_at: `${account.created_at.toISOString().slice(0, 19)}Z`,
    }],
  };
}

describe('the lists (spec 4.9–4.11, D7)', () => {
  test('each list: its records, nulls while pending, UTC seconds, ordered by staging time then number', async () => {
    const tenant = await createTenant(t);
    const expected = await threeAccounts(tenant);
    assert.match(expected.imported[0]!.account_created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const all = await list(tenant, 'all');
    assert.equal(all.status, 200);
    assert.match(String(all.headers['content-type']), /^application\/json/);
    assert.deepEqual(all.json, [...expected.pending, ...expected.imported]);
    assert.deepEqual((await list(tenant, 'pending')).json, expected.pending);
    assert.deepEqual((await list(tenant, 'imported')).json, expected.imported);
  });

  test('a supplier with nothing staged lists []', async () => {
    const tenant = await createTenant(t);
    for (const kind of KINDS) assert.deepEqual((await list(tenant, kind)).json, []);
  });

  test('404 not_found alike for an unknown supplier and another organisation\'s (D3)', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    await stage(t, other);
    for (const kind of KINDS) {
      for (const supplier of [unique('NOPE'), other.supplier]) {
        const res = await list(tenant, kind, '', supplier);
        assert.equal(res.status, 404);
        assert.deepEqual(res.json, { detail: `No import supplier with code "${supplier}".`, code: 'not_found' });
      }
    }
  });

  test('a list longer than one read chunk streams whole and in order', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const count = STREAM_CHUNK_ROWS * 2 + 5;
    await sql`INSERT INTO account_imports (supplier_id, external_account_number, data, staged_at)
      SELECT ${supplierId}, 'BULK-' || lpad(i::text, 6, '0'), '{}', timestamptz '2024-01-01T00:00:00Z' + (i / 3) * interval '1 second'
      FROM generate_series(1, ${count}::int) AS i`.execute(db);
    for (const kind of ['all', 'pending'] as const) {
      const res = await list(tenant, kind);
      assert.equal(res.status, 200);
      assert.equal(res.json.length, count);
      const numbers = res.json.map((r: { external_account_number: string }) => r.external_account_number);
      assert.deepEqual(numbers, [...numbers].sort());
      assert.equal(new Set(numbers).size, count);
    }
    assert.deepEqual((await list(tenant, 'imported')).json, []);
  });
});

describe('keyset pages (D7 addition)', () => {
  test('page_size pages in list order with a Link to the next page, and none on the last', async () => {
    const tenant = await createTenant(t);
    const expected = await threeAccounts(tenant);
    await stage(t, tenant);
    await stage(t, tenant);
    const whole = (await list(tenant, 'all')).json;
    assert.equal(whole.length, 5);
    assert.deepEqual(whole.slice(0, 3), [...expected.pending, ...expected.imported]);

    const pages: unknown[][] = [];
    let url: string | null = `/v1/data-import/all-account-import-processes/${tenant.supplier}/?page_size=2`;
    while (url) {
      const res = await call(t.app, 'GET', url, { token: tenant.token });
      assert.equal(res.status, 200);
      pages.push(res.json);
      const link = res.headers.link as string | undefined;
      url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : null;
    }
    assert.deepEqual(pages.map((p) => p.length), [2, 2, 1]);
    assert.deepEqual(pages.flat(), whole);

    const pending = await list(tenant, 'pending', '?page_size=10');
    assert.deepEqual(pending.json, whole.filter((r: { service_account_number: string | null }) => r.service_account_number === null));
    assert.equal(pending.headers.link, undefined);
  });

  test('a bad cursor or page size is 400 invalid at that parameter', async () => {
    const tenant = await createTenant(t);
    const cursors = ['not-a-cursor', Buffer.from('["yesterday","x"]').toString('base64url'), Buffer.from('{}').toString('base64url')];
    for (const cursor of cursors) {
      const res = await list(tenant, 'all', `?page_size=5&cursor=${cursor}`);
      assert.equal(res.status, 400);
      assert.deepEqual(res.json, {
        detail: res.json.detail, code: 'invalid', errors: [{ detail: res.json.detail, code: 'invalid', attr: 'cursor' }],
      });
    }
    for (const [size, code] of [['0', 'min_value'], ['1001', 'max_value'], ['two', 'invalid']] as const) {
      const res = await list(tenant, 'pending', `?page_size=${size}`);
      assert.equal(res.status, 400);
      assert.equal(res.json.code, 'invalid');
      assert.deepEqual(res.json.errors.map((e: { code: string; attr: string }) => [e.code, e.attr]), [[code, 'page_size']]);
    }
  });
});
