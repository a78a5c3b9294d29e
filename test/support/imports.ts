import { randomUUID } from 'node:crypto';
import { after } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import type { AccountData } from '../../src/modules/account-data/index.ts';
import { accountLockKey } from '../../src/modules/account-imports/index.ts';
import { findSupplierByCode } from '../../src/modules/admin/index.ts';
import { accountPayload } from './payloads.ts';
import { call, type Tenant, type TestApp } from './test-app.ts';

// Staging and creating through the HTTP endpoints, and a second PostgreSQL session for tests that
// hold locks "from another instance".

export const STAGE_URL = '/v1/data-import/account-import-process/create-or-update/';
export const PROCESS_URL = '/v1/data-import/account-import-process/process/';

export async function stage(t: TestApp, tenant: Tenant, payload: AccountData = accountPayload(tenant.supplier)) {
  const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
  if (res.status !== 201 && res.status !== 200) throw new Error(`staging failed: ${res.status} ${res.body}`);
  return payload;
}

export function processAccount(
  t: TestApp, tenant: Tenant, ext: string, extra: { dry_run?: boolean; operations_team_name?: string; import_supplier_code?: string } = {},
) {
  return call(t.app, 'POST', PROCESS_URL, {
    token: tenant.token,
    body: { external_account_number: ext, import_supplier_code: tenant.supplier, operations_team_name: tenant.team, ...extra },
  });
}

/** Stages a fresh payload and creates its account; returns the payload and the account number. */
export async function stageAndCreate(t: TestApp, tenant: Tenant, payload?: AccountData) {
  const staged = await stage(t, tenant, payload);
  const res = await processAccount(t, tenant, staged.external_account_number);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.body}`);
  return { payload: staged, number: res.json.service_account_number as string };
}

export async function supplierIdOf(t: TestApp, code: string): Promise<number> {
  const supplier = await findSupplierByCode(t.store.db, code);
  if (!supplier) throw new Error(`no supplier ${code}`);
  return supplier.id;
}

export const onPostgres = Boolean(process.env.DATABASE_URL);
export const PG_ONLY = onPostgres ? false : 'locks between sessions need PostgreSQL: PGlite has one session (set DATABASE_URL)';

/** A session of its own on a test database (a file's is `t.config.databaseUrl`), closed by the caller. */
export async function pgSession(url = process.env.DATABASE_URL): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a terminated session must not crash the test process
  await client.connect();
  return client;
}

/**
 * A database of the test's own on the test PostgreSQL server, dropped when the file ends. Advisory
 * locks are per database, so tests that count concurrency slots are not disturbed by other test
 * files creating accounts on the shared database at the same time.
 */
export async function isolatedDatabaseUrl(): Promise<string> {
  const database = await isolatedDatabase();
  after(() => database.drop());
  return database.url;
}

/**
 * isolatedDatabaseUrl for a caller that drops it itself, once everything using it has stopped: a
 * test app drops its database after its workers and pool are closed, so no late query of theirs
 * meets a database that is gone.
 */
export async function isolatedDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `t_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = await pgSession();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const session = await pgSession();
      await session.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await session.end();
    },
  };
}

export async function waitUntil(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Waits for two looks at a migration job that should do nothing, instead of sleeping to see that
 * nothing happened: each look a queue job of the job that completed, the dispatcher's (it keeps
 * looking while records are unsent) or a waiting record's (a worker takes it, finds the job paused and
 * sends it again for later).
 */
export async function twoLooks(t: TestApp, jobId: string): Promise<void> {
  const looks = async () => {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job
      WHERE name IN ('migration_dispatch', 'migration_record') AND data->>'job_id' = ${jobId} AND state = 'completed'`.execute(t.store.db);
    return rows[0]!.n;
  };
  const before = await looks();
  await waitUntil(async () => (await looks()) >= before + 2, `two looks at job ${jobId}`, 30_000);
}

/**
 * Holds the account lock of `ext` as a create running on another instance would; answers its release.
 * On PostgreSQL from a session of its own (a lock taken through the pool could be released from
 * another of its connections, and stay held); PGlite has one session, which the app shares.
 */
export async function holdCreate(t: TestApp, supplier: string, ext: string): Promise<() => Promise<void>> {
  const row = await t.store.db.selectFrom('account_imports').select('id')
    .where('supplier_id', '=', await supplierIdOf(t, supplier)).where('external_account_number', '=', ext).executeTakeFirstOrThrow();
  const key = accountLockKey(Number(row.id));
  if (onPostgres) {
    const session = await pgSession(t.config.databaseUrl);
    await session.query('SELECT pg_advisory_lock($1::int8)', [key]);
    return async () => { await session.end(); };
  }
  await sql`SELECT pg_advisory_lock(${key}::int8)`.execute(t.store.db);
  return async () => { await sql`SELECT pg_advisory_unlock(${key}::int8)`.execute(t.store.db); };
}
