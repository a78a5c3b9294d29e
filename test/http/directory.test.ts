import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { openDirectory } from '../../src/core/directory.ts';
import type { ChannelHandlers } from '../../src/db/listener.ts';
import type { Database } from '../../src/db/schema.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// The directory (API keys and suppliers in memory, forgotten on a notice from the store): a request
// makes no round trip to check its key or find its supplier, and a revocation or a pause is still
// seen at once. Multi-instance behaviour is in test/faults/directory.test.ts.
const t = await buildTestApp();
const db = t.store.db;
const STAGE = '/v1/data-import/account-import-process/create-or-update/';
const READ = (supplier: string) => `/v1/data-import/pending-account-import-processes/${supplier}/`;

/** A change made with triggers off for this transaction: the store sends no notice of it. */
async function silently(work: (trx: Kysely<Database>) => Promise<unknown>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`SET LOCAL session_replication_role = replica`.execute(trx);
    await work(trx);
  });
}
const notify = () => sql`SELECT pg_notify('directory_changed', 'test')`.execute(db);

/** Polls until `check` holds, for at most `ms`; the milliseconds it took. */
async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > ms) assert.fail(`not within ${ms} ms`);
    await sleep(10);
  }
}

describe('the directory serves keys and suppliers from memory', () => {
  test('a key revoked without a notice is still accepted: the guard did not ask the store; a notice ends it', async () => {
    const tenant = await createTenant(t);
    assert.equal((await call(t.app, 'GET', READ(tenant.supplier), { token: tenant.token })).status, 200);
    await silently((trx) => trx.updateTable('api_keys').set({ revoked_at: new Date() }).where('prefix', '=', tenant.apiKey.split('.')[0]!).execute());
    assert.equal((await call(t.app, 'GET', READ(tenant.supplier), { token: tenant.token })).status, 200);
    await notify();
    await within(1000, async () => (await call(t.app, 'GET', READ(tenant.supplier), { token: tenant.token })).status === 401);
  });

  test('a supplier paused without a notice still stages; a notice ends it', async () => {
    const tenant = await createTenant(t);
    const stage = (ext: string) => call(t.app, 'POST', STAGE, { token: tenant.token, body: accountPayload(tenant.supplier, { external_account_number: ext }) });
    assert.equal((await stage('DIR-1')).status, 201);
    await silently((trx) => trx.updateTable('import_suppliers').set({ status: 'paused' }).where('code', '=', tenant.supplier).execute());
    assert.equal((await stage('DIR-2')).status, 201);
    await notify();
    await within(1000, async () => (await stage('DIR-3')).json?.code === 'import_supplier_paused');
  });
});

describe('a change through import-admin is seen by the next request after the notice', () => {
  test('a revoked key is refused as soon as the notice is in (sync waits for it)', async () => {
    const tenant = await createTenant(t);
    assert.equal((await call(t.app, 'GET', READ(tenant.supplier), { token: tenant.token })).status, 200);
    await admin.revokeApiKey(db, tenant.apiKey);
    await t.directory.sync();
    const res = await call(t.app, 'GET', READ(tenant.supplier), { token: tenant.token });
    assert.deepEqual([res.status, res.json], [401, { detail: 'Invalid or revoked credentials.', code: 'authentication_failed' }]);
  });

  test('a paused supplier refuses staging, and takes it again when resumed', async () => {
    const tenant = await createTenant(t);
    const stage = (ext: string) => call(t.app, 'POST', STAGE, { token: tenant.token, body: accountPayload(tenant.supplier, { external_account_number: ext }) });
    assert.equal((await stage('DIR-P1')).status, 201);
    await admin.setSupplier(db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    const paused = await stage('DIR-P2');
    assert.deepEqual([paused.status, paused.json.code, paused.json.errors?.[0]?.attr], [400, 'import_supplier_paused', 'import_supplier']);
    await admin.setSupplier(db, tenant.supplier, { status: 'ongoing' });
    await t.directory.sync();
    assert.equal((await stage('DIR-P3')).status, 201);
  });

  test('a supplier created after a miss is found at once (misses are not remembered)', async () => {
    const tenant = await createTenant(t);
    const code = `${tenant.supplier}-NEW`;
    assert.equal((await call(t.app, 'GET', READ(code), { token: tenant.token })).status, 404);
    await admin.createSupplier(db, code, tenant.organisation);
    assert.equal((await call(t.app, 'GET', READ(code), { token: tenant.token })).status, 200);
  });
});

describe('without its notices, the directory reads the store', () => {
  /** A directory over the test's store whose change feed the test drives. */
  async function drivenDirectory(limits: Parameters<typeof openDirectory>[2] = {}) {
    let handlers: ChannelHandlers | undefined;
    const directory = await openDirectory({
      db,
      listen: async (_channel, h) => {
        handlers = h;
        h.connected(true);
        return async () => {};
      },
    }, t.clock, limits);
    return { directory, feed: handlers! };
  }

  test('while the listening session is down every lookup goes to the store, and memory is used again once it is back', async () => {
    const tenant = await createTenant(t);
    const org = Number((await db.selectFrom('organisations').select('id').where('name', '=', tenant.organisation).executeTakeFirstOrThrow()).id);
    const { directory, feed } = await drivenDirectory();
    const status = async () => (await directory.supplier(org, tenant.supplier))?.status;
    assert.equal(await status(), 'ongoing');
    feed.connected(false);
    await silently((trx) => trx.updateTable('import_suppliers').set({ status: 'paused' }).where('code', '=', tenant.supplier).execute());
    assert.equal(await status(), 'paused');
    feed.connected(true);
    assert.equal(await status(), 'paused');
    await silently((trx) => trx.updateTable('import_suppliers').set({ status: 'complete' }).where('code', '=', tenant.supplier).execute());
    assert.equal(await status(), 'paused', 'held in memory again, so a change without a notice is not seen');
    feed.notice('import_suppliers');
    assert.equal(await status(), 'complete');
    await directory.close();
  });

  test('a lookup that was reading when a notice arrived is not remembered', async () => {
    const tenant = await createTenant(t);
    const org = Number((await db.selectFrom('organisations').select('id').where('name', '=', tenant.organisation).executeTakeFirstOrThrow()).id);
    const { directory, feed } = await drivenDirectory();
    const reading = directory.supplier(org, tenant.supplier);
    feed.notice('import_suppliers');
    assert.equal((await reading)?.status, 'ongoing');
    await silently((trx) => trx.updateTable('import_suppliers').set({ status: 'paused' }).where('code', '=', tenant.supplier).execute());
    assert.equal((await directory.supplier(org, tenant.supplier))?.status, 'paused');
    await directory.close();
  });

  test('an entry is trusted for a bounded time only: after it, the store is read again without a notice', async () => {
    const tenant = await createTenant(t);
    const org = Number((await db.selectFrom('organisations').select('id').where('name', '=', tenant.organisation).executeTakeFirstOrThrow()).id);
    const { directory } = await drivenDirectory({ maxAgeMs: 300_000 });
    const status = async () => (await directory.supplier(org, tenant.supplier))?.status;
    assert.equal(await status(), 'ongoing');
    await silently((trx) => trx.updateTable('import_suppliers').set({ status: 'paused' }).where('code', '=', tenant.supplier).execute());
    assert.equal(await status(), 'ongoing', 'held in memory');
    try {
      t.clock.advance(299_000);
      assert.equal(await status(), 'ongoing', 'still within its time');
      t.clock.advance(2_000);
      assert.equal(await status(), 'paused', 'expired, so read again');
    } finally {
      t.clock.reset();
    }
    await directory.close();
  });

  test('memory holds a bounded number of entries: reaching the bound starts over', async () => {
    const tenant = await createTenant(t);
    const org = Number((await db.selectFrom('organisations').select('id').where('name', '=', tenant.organisation).executeTakeFirstOrThrow()).id);
    for (const code of ['B', 'C']) await admin.createSupplier(db, `${tenant.supplier}-${code}`, tenant.organisation);
    const { directory } = await drivenDirectory({ maxEntries: 2 });
    const status = async (code: string) => (await directory.supplier(org, code))?.status;
    assert.equal(await status(tenant.supplier), 'ongoing');
    await silently((trx) => trx.updateTable('import_suppliers').set({ status: 'paused' }).where('code', '=', tenant.supplier).execute());
    assert.equal(await status(`${tenant.supplier}-B`), 'ongoing');
    assert.equal(await status(tenant.supplier), 'ongoing', 'two entries: still held');
    assert.equal(await status(`${tenant.supplier}-C`), 'ongoing');
    assert.equal(await status(tenant.supplier), 'paused', 'the third entry started over, so the store was read');
    await directory.close();
  });
});
