import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { requireCallerSupplier, requireSupplierOpen } from '../../core/suppliers.ts';
import type { AccountData } from '../account-data/account-data.schemas.ts';
import type { Caller } from '../../core/caller.ts';
import { recordEvent } from '../events/events.repository.ts';
import type { StageAccountResponse } from './account-imports.schemas.ts';
import * as imports from './account-imports.repository.ts';
import * as errors from './import-errors.ts';

// Stage (spec 4.2, D6): the body was validated as account data by the route schema. The upsert is
// one statement, so concurrent stages of one account make one row and a stage racing the create of
// that account either lands before it or is refused after it.

export interface StageResult { created: boolean; body: StageAccountResponse }

export async function stageAccount(db: Kysely<Database>, caller: Caller, data: AccountData): Promise<StageResult> {
  const supplier = await requireCallerSupplier(caller, data.import_supplier, 'import_supplier');
  requireSupplierOpen(supplier, 'import_supplier');
  const ext = data.external_account_number;
  const body = { import_supplier: supplier.code, external_account_number: ext };

  // The event commits with the staging it reports, or neither does (D13).
  const staged = await db.transaction().execute(async (trx) => {
    const row = await imports.upsertStaged(trx, supplier.id, ext, data);
    if (row) {
      await recordEvent(trx, { supplierId: supplier.id, type: 'import_process.staged', externalAccountNumber: ext, data: { first_staging: row.inserted } });
    }
    return row;
  });
  if (staged) return { created: staged.inserted, body };

  // The upsert's guard refused: the account is imported or marked to skip.
  const state = await imports.findImportState(db, supplier.id, ext);
  if (state) errors.requireNotImportedOrSkipped(ext, state);
  throw new Error(`staging ${ext} changed no row, yet the account is neither imported nor skipped`);
}
