import type { Supplier } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import { AppError } from './errors.ts';

/**
 * For writes: an unknown or foreign supplier (the two are indistinguishable, D3) is a 400 at the field
 * that named it.
 */
export async function requireCallerSupplier(caller: Caller, code: string, attr: 'import_supplier' | 'import_supplier_code'): Promise<Supplier> {
  const supplier = await caller.findSupplier(code);
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
