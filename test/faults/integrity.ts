import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { SLOT_LOCK_SPACE } from '../../src/modules/account-imports/index.ts';
import { loadConfig } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import { createTokenService } from '../../src/modules/auth/index.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { systemClock } from '../../src/core/clock.ts';
import { createTenant, type Tenant, type TestApp } from '../support/test-app.ts';

// Shared by the fault tests that run real server processes over PostgreSQL: a store of the test's
// own (to set up tenants and inspect the tables), and the invariants that must hold after any fault.

export interface Harness { t: TestApp; close(): Promise<void> }

/** A store and token service over `url` (the same signing key as the servers), without an HTTP app. */
export async function openHarness(url: string): Promise<Harness> {
  const config = loadConfig({ ...process.env, DATABASE_URL: url, DEMO_SEED: 'false' });
  const store = await openStore({ databaseUrl: url, poolSize: 10 });
  await migrate(store);
  const tokens = await createTokenService({ db: store.db, directory: storeDirectory(store.db), clock: systemClock }, config);
  const t = { store, tokens, config } as unknown as TestApp;
  return { t, close: () => store.close() };
}

export const tenantOf = (h: Harness, options: { customerEmails?: boolean } = {}): Promise<Tenant> =>
  createTenant(h.t, { customerEmails: options.customerEmails ?? false });

/** The server URL with an application_name, so the test can tell its sessions apart in pg_stat_activity. */
export function withAppName(url: string, name: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}application_name=${encodeURIComponent(name)}`;
}

/**
 * Every broken invariant of a supplier's accounts, as readable lines (empty when all hold):
 * each account is whole (customers, addresses, points, meters, registers as staged), linked both
 * ways with its import process, and the outbox holds mail only for accounts that exist.
 */
export async function integrityProblems(db: Kysely<Database>, supplierCode: string): Promise<string[]> {
  const { rows } = await sql<{ problem: string }>`
    WITH s AS (SELECT id FROM import_suppliers WHERE code = ${supplierCode}),
    a AS (SELECT acc.*, ai.data, ai.account_id AS linked FROM accounts acc
          LEFT JOIN account_imports ai ON ai.id = acc.account_import_id
          WHERE acc.supplier_id = (SELECT id FROM s)),
    staged AS (
      SELECT a.id,
        jsonb_array_length(a.data->'customers') AS customers,
        jsonb_array_length(a.data->'supply_addresses') AS addresses,
        (SELECT count(*) FROM jsonb_array_elements(a.data->'supply_addresses') ad, jsonb_array_elements(ad->'supply_points') p) AS points,
        (SELECT count(*) FROM jsonb_array_elements(a.data->'supply_addresses') ad, jsonb_array_elements(ad->'supply_points') p,
           jsonb_array_elements(coalesce(p->'meters', '[]')) m) AS meters,
        (SELECT count(*) FROM jsonb_array_elements(a.data->'supply_addresses') ad, jsonb_array_elements(ad->'supply_points') p,
           jsonb_array_elements(coalesce(p->'meters', '[]')) m, jsonb_array_elements(m->'registers') r) AS registers
      FROM a),
    built AS (
      SELECT a.id,
        (SELECT count(*) FROM customers c WHERE c.account_id = a.id) AS customers,
        (SELECT count(*) FROM supply_addresses sa WHERE sa.account_id = a.id) AS addresses,
        (SELECT count(*) FROM supply_points sp WHERE sp.account_id = a.id) AS points,
        (SELECT count(*) FROM meters m JOIN supply_points sp ON sp.id = m.supply_point_id WHERE sp.account_id = a.id) AS meters,
        (SELECT count(*) FROM registers r JOIN meters m ON m.id = r.meter_id JOIN supply_points sp ON sp.id = m.supply_point_id WHERE sp.account_id = a.id) AS registers
      FROM a)
    SELECT 'account ' || a.number || ' is not linked back from its import process' AS problem FROM a WHERE a.linked IS DISTINCT FROM a.id
    UNION ALL
    SELECT 'account ' || a.number || ' is partial: staged ' || row(st.customers, st.addresses, st.points, st.meters, st.registers)::text
           || ', built ' || row(b.customers, b.addresses, b.points, b.meters, b.registers)::text
      FROM a JOIN staged st ON st.id = a.id JOIN built b ON b.id = a.id
      WHERE (st.customers, st.addresses, st.points, st.meters, st.registers) IS DISTINCT FROM (b.customers, b.addresses, b.points, b.meters, b.registers)
    UNION ALL
    SELECT 'import ' || ai.external_account_number || ' points to account ' || ai.account_id || ', which is not its account'
      FROM account_imports ai LEFT JOIN accounts acc ON acc.id = ai.account_id
      WHERE ai.supplier_id = (SELECT id FROM s) AND ai.account_id IS NOT NULL AND (acc.id IS NULL OR acc.account_import_id <> ai.id)
    UNION ALL
    SELECT 'outbox email ' || o.id || ' for a missing account' FROM outbox_emails o LEFT JOIN accounts acc ON acc.id = o.account_id WHERE acc.id IS NULL
    UNION ALL
    SELECT 'orphan ' || t.kind || ' row ' || t.id FROM (
      SELECT 'customers' AS kind, c.id FROM customers c LEFT JOIN accounts acc ON acc.id = c.account_id WHERE acc.id IS NULL
      UNION ALL SELECT 'supply_points', sp.id FROM supply_points sp LEFT JOIN accounts acc ON acc.id = sp.account_id WHERE acc.id IS NULL
      UNION ALL SELECT 'meters', m.id FROM meters m LEFT JOIN supply_points sp ON sp.id = m.supply_point_id WHERE sp.id IS NULL
    ) t
  `.execute(db);
  return rows.map((r) => r.problem);
}

/** Sessions (by application_name prefix) still connected, and the advisory locks they hold. */
export async function sessionsOf(db: Kysely<Database>, appNamePrefix: string): Promise<{ sessions: number; advisoryLocks: number; slots: number }> {
  const { rows } = await sql<{ sessions: number; advisory_locks: number; slots: number }>`
    SELECT
      (SELECT count(*)::int FROM pg_stat_activity WHERE application_name LIKE ${`${appNamePrefix}%`}) AS sessions,
      (SELECT count(*)::int FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND a.application_name LIKE ${`${appNamePrefix}%`}) AS advisory_locks,
      (SELECT count(*)::int FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = ${SLOT_LOCK_SPACE}::int8::oid
          AND a.application_name LIKE ${`${appNamePrefix}%`}) AS slots
  `.execute(db);
  return { sessions: rows[0]!.sessions, advisoryLocks: rows[0]!.advisory_locks, slots: rows[0]!.slots };
}

export async function waitFor<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await probe();
  while (!ok(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    last = await probe();
  }
  return last;
}
