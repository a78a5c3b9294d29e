import type { Kysely } from 'kysely';
import type { Database, Supplier } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import { AppError } from './errors.ts';

/**
 * The supplier named by `code`, if it belongs to the caller's organisation. Another organisation's
 * supplier is indistinguishable from an unknown one (D3): both are undefined here.
 */
export async function findCallerSupplier(db: Kysely<Database>, caller: Caller, code: string): Promise<Supplier | undefined> {
  const known = caller.knownSupplier;
  if (known && known.code === code && known.organisation_id === caller.organisationId) return known;
  return db.selectFrom('import_suppliers').selectAll()
    .where('code', '=', code).where('organisation_id', '=', caller.organisationId)
    .executeTakeFirst();
}

/** For writes: an unknown or foreign supplier is a 400 at the field that named it (D3). */
export async function requireCallerSupplier(
  db: Kysely<Database>, caller: Caller, code: string, attr: 'import_supplier' | 'import_supplier_code',
): Promise<Supplier> {
  const supplier = await findCallerSupplier(db, caller, code);
  if (!supplier) throw AppError.field('import_supplier_not_found', `No import supplier with code "${code}".`, attr);
  return supplier;
}

/** For staging and creating only: a paused or complete supplier takes no new accounts (D6). */
export function requireSupplierOpen(supplier: Supplier, attr: 'import_supplier' | 'import_supplier_code'): void {
  if (supplier.status === 'paused') {
    throw AppError.field('import_supplier_paused', `Import supplier "${supplier.code}" is paused.`, attr);
  }
  if (supplier.status === 'complete') {
    throw AppError.field('import_supplier_complete', `Import supplier "${supplier.code}" is complete.`, attr);
  }
}
