import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, PaymentVendorsTable, SupplierStatus } from '../../db/schema.ts';

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

export function apiKeysOf(db: Db, organisationId: number) {
  return db.selectFrom('api_keys').select(['prefix', 'created_at', 'revoked_at']).where('organisation_id', '=', organisationId)
    .orderBy('created_at').orderBy('id').execute();
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

/** Suppliers with their organisation's name, by code; of one organisation, or the one with a code, when given. */
export function listSuppliers(db: Db, organisationId?: number, code?: string) {
  let query = db.selectFrom('import_suppliers as s').innerJoin('organisations as o', 'o.id', 's.organisation_id')
    .select(['s.code', 'o.name as organisation', 's.status', 's.customer_emails', 's.documents_root']);
  if (organisationId !== undefined) query = query.where('s.organisation_id', '=', organisationId);
  if (code !== undefined) query = query.where('s.code', '=', code);
  return query.orderBy('s.code').execute();
}

export function listTeams(db: Db) {
  return db.selectFrom('operations_teams').select(['name', 'created_at']).orderBy('name').execute();
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

export type VendorRow = Selectable<PaymentVendorsTable>;

export function listVendors(db: Db): Promise<VendorRow[]> {
  return db.selectFrom('payment_vendors').selectAll().orderBy('code').execute();
}

export function findVendorByCode(db: Db, code: string): Promise<VendorRow | undefined> {
  return db.selectFrom('payment_vendors').selectAll().where('code', '=', code).executeTakeFirst();
}

export function updateVendor(db: Db, code: string, changes: Partial<Pick<VendorValues, 'kind' | 'url' | 'secret' | 'timeout_ms'>>) {
  return db.updateTable('payment_vendors').set(changes).where('code', '=', code).returningAll().executeTakeFirst();
}

export function lockVendor(trx: Transaction<Database>, code: string) {
  return trx.selectFrom('payment_vendors').select('id').where('code', '=', code).forUpdate().executeTakeFirst();
}

export async function countVendorInstructions(trx: Transaction<Database>, vendorId: number): Promise<number> {
  const row = await trx.selectFrom('payment_instructions').select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('vendor_id', '=', vendorId).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function deleteVendor(trx: Transaction<Database>, vendorId: number): Promise<void> {
  await trx.deleteFrom('payment_vendors').where('id', '=', vendorId).execute();
}

/** Marks staged data not yet imported to be skipped; undefined when there is none such (findImported tells whether it was imported). */
export function markAccountSkipped(db: Db, supplierId: number, externalAccountNumber: string) {
  return db.updateTable('account_imports').set({ skipped: true })
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', externalAccountNumber).where('account_id', 'is', null)
    .returning(['id']).executeTakeFirst();
}

/** The account imported from the staged data, if it was. */
export function findImported(db: Db, supplierId: number, externalAccountNumber: string) {
  return db.selectFrom('account_imports').innerJoin('accounts', 'accounts.id', 'account_imports.account_id')
    .select(['accounts.number']).where('account_imports.supplier_id', '=', supplierId)
    .where('account_imports.external_account_number', '=', externalAccountNumber).executeTakeFirst();
}
