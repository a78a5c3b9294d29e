import type { Kysely } from 'kysely';
import type { Database, SupplierStatus } from '../../db/schema.ts';

// Organisations, API keys, suppliers, operations teams and payment vendors: the service team's
// configuration (D2). Free functions, executor first.
type Db = Kysely<Database>;

export function findOrganisationByName(db: Db, name: string) {
  return db.selectFrom('organisations').selectAll().where('name', '=', name).executeTakeFirst();
}

export function insertOrganisation(db: Db, name: string) {
  return db.insertInto('organisations').values({ name }).returningAll().executeTakeFirstOrThrow();
}

export function countOrganisations(db: Db) {
  return db.selectFrom('organisations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
}

export function insertApiKey(db: Db, organisationId: number, prefix: string, secretHash: string) {
  return db.insertInto('api_keys').values({ organisation_id: organisationId, prefix, secret_hash: secretHash })
    .returningAll().executeTakeFirstOrThrow();
}

export function findApiKeyByPrefix(db: Db, prefix: string) {
  return db.selectFrom('api_keys').selectAll().where('prefix', '=', prefix).executeTakeFirst();
}

export function findActiveApiKey(db: Db, id: number) {
  return db.selectFrom('api_keys').select(['id', 'organisation_id']).where('id', '=', id).where('revoked_at', 'is', null)
    .executeTakeFirst();
}

export function revokeApiKey(db: Db, prefix: string) {
  return db.updateTable('api_keys').set({ revoked_at: new Date() }).where('prefix', '=', prefix)
    .where('revoked_at', 'is', null).returning(['id', 'prefix']).executeTakeFirst();
}

export interface SupplierValues {
  code: string;
  organisation_id: number;
  status?: SupplierStatus;
  customer_emails?: boolean;
  documents_root?: string;
}

export function insertSupplier(db: Db, values: SupplierValues) {
  return db.insertInto('import_suppliers').values(values).returningAll().executeTakeFirstOrThrow();
}

export function updateSupplier(db: Db, code: string, changes: Partial<Pick<SupplierValues, 'status' | 'customer_emails' | 'documents_root'>>) {
  return db.updateTable('import_suppliers').set(changes).where('code', '=', code).returningAll().executeTakeFirst();
}

export function findSupplierByCode(db: Db, code: string) {
  return db.selectFrom('import_suppliers').selectAll().where('code', '=', code).executeTakeFirst();
}

export function insertTeam(db: Db, name: string) {
  return db.insertInto('operations_teams').values({ name }).returningAll().executeTakeFirstOrThrow();
}

export function findTeamByName(db: Db, name: string) {
  return db.selectFrom('operations_teams').selectAll().where('name', '=', name).executeTakeFirst();
}

export interface VendorValues { code: string; kind: string; url: string; secret: string | null; timeout_ms: number }

export function insertVendor(db: Db, values: VendorValues) {
  return db.insertInto('payment_vendors').values(values).returningAll().executeTakeFirstOrThrow();
}

export function markAccountSkipped(db: Db, supplierId: number, externalAccountNumber: string) {
  return db.updateTable('account_imports').set({ skipped: true })
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', externalAccountNumber)
    .returning(['id', 'account_id']).executeTakeFirst();
}
