import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { findSupplierByCode, findTeamByName } from '../../src/modules/admin/index.ts';
import { unique, type Tenant, type TestApp } from './test-app.ts';

export interface ImportedAccount { externalAccountNumber: string; serviceAccountNumber: string; accountId: number }

/**
 * An imported account written straight into the store, for tests of what is imported onto accounts.
 * It has the rows an account needs (import process, account) and nothing else; tests of account
 * creation itself go through the HTTP endpoints.
 */
export async function insertImportedAccount(t: TestApp, tenant: Tenant): Promise<ImportedAccount> {
  const row = await newAccountRow(t, tenant);
  return t.store.db.transaction().execute(async (trx) => {
    const account = await trx.insertInto('accounts').values(row).returning('id').executeTakeFirstOrThrow();
    await trx.updateTable('account_imports').set({ account_id: account.id }).where('id', '=', row.account_import_id).execute();
    return { externalAccountNumber: row.external_account_number, serviceAccountNumber: row.number, accountId: account.id };
  });
}

/** A staged import process without an account yet, and the account row a create would write for it. */
export async function newAccountRow(t: TestApp, tenant: Tenant, number = `A-${randomBytes(4).toString('hex').toUpperCase()}`) {
  const db = t.store.db;
  const supplier = await findSupplierByCode(db, tenant.supplier);
  const team = await findTeamByName(db, tenant.team);
  if (!supplier || !team) throw new Error('tenant is incomplete');
  const externalAccountNumber = unique('EXT');
  const staged = await db.insertInto('account_imports')
    .values({ supplier_id: supplier.id, external_account_number: externalAccountNumber, data: '{}' })
    .returning('id').executeTakeFirstOrThrow();
  return {
    number, account_import_id: staged.id, supplier_id: supplier.id, external_account_number: externalAccountNumber,
    operations_team_id: team.id, billing_street_address: '1 Test Street', billing_country: 'GB', billing_postal_code: 'SW1A 1AA',
  };
}

/** Staged but not imported: endpoints that need an account answer 404 for it (D8). */
export async function insertStagedOnly(t: TestApp, tenant: Tenant): Promise<string> {
  const supplier = await findSupplierByCode(t.store.db, tenant.supplier);
  if (!supplier) throw new Error('tenant is incomplete');
  const externalAccountNumber = unique('EXT');
  await t.store.db.insertInto('account_imports')
    .values({ supplier_id: supplier.id, external_account_number: externalAccountNumber, data: '{}' }).execute();
  return externalAccountNumber;
}

export interface PlantedConflict { fired(): Promise<boolean>; remove(): Promise<void> }

/** deadlock_detected, serialization_failure; or query_canceled, as a statement stopped at its time limit is. */
export type PlantedCode = '40P01' | '40001' | '57014';

/** Where a planted conflict strikes: the rows of `table` that `when` (SQL over NEW) picks, on `event`. */
export interface ConflictSite { table: string; event: 'INSERT' | 'UPDATE'; when: string; times?: number }

/** A trigger planted by a test: `remove` takes it away. */
export interface PlantedTrigger { remove(): Promise<void> }

/**
 * Plants a BEFORE trigger at `site` whose PL/pgSQL `body` runs for the rows `when` picks, with `name`
 * (a sequence of the same name, made with it, is there for the body to count with): another writer,
 * a failure, a row gone, played by the database at an exact point of the service's work.
 */
export async function plantTrigger(db: Kysely<Database>, site: Omit<ConflictSite, 'times'>, body: (name: string) => string): Promise<PlantedTrigger> {
  const name = unique('planted').replace(/\W/g, '_');
  await sql.raw(`CREATE SEQUENCE ${name}`).execute(db);
  await sql.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body(name)} END $$`).execute(db);
  await sql.raw(`CREATE TRIGGER ${name} BEFORE ${site.event} ON ${site.table} FOR EACH ROW WHEN (${site.when}) EXECUTE FUNCTION ${name}()`).execute(db);
  return {
    async remove() {
      for (const drop of [`DROP TRIGGER ${name} ON ${site.table}`, `DROP FUNCTION ${name}()`, `DROP SEQUENCE ${name}`]) await sql.raw(drop).execute(db);
    },
  };
}

/**
 * Plants one of PostgreSQL's own errors for a transaction it rolled back because of other work,
 * deadlock_detected (40P01) by default or serialization_failure (40001), raised once (or `site.times`
 * times) by a trigger at `site`: what a statement meets when PostgreSQL settles a conflict by rolling it back. `fired`
 * tells whether it was raised; `remove` takes it away.
 */
export async function plantConflictAt(db: Kysely<Database>, site: ConflictSite, code: PlantedCode = '40P01'): Promise<PlantedConflict> {
  let sequence = '';
  const planted = await plantTrigger(db, site, (name) => {
    sequence = name;
    return `IF nextval('${name}') <= ${site.times ?? 1} THEN
        RAISE EXCEPTION 'conflict with another transaction (planted)' USING ERRCODE = '${code}';
      END IF;
      RETURN NEW;`;
  });
  return {
    fired: async () => (await sql<{ fired: boolean }>`SELECT is_called AS fired FROM ${sql.table(sequence)}`.execute(db)).rows[0]!.fired,
    remove: () => planted.remove(),
  };
}

/** A conflict planted on the insert of account `ext` (plantConflictAt). */
export const plantConflictOnce = (db: Kysely<Database>, ext: string, code: PlantedCode = '40P01') =>
  plantConflictAt(db, { table: 'accounts', event: 'INSERT', when: `NEW.external_account_number = '${ext}'` }, code);
