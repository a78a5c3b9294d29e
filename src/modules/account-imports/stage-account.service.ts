import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { requireCallerSupplier, requireSupplierOpen } from '../../core/suppliers.ts';
import type { AccountData } from '../account-data/index.ts';
import { withNormalisedPostcodes } from '../account-data/index.ts';
import type { Caller } from '../../core/caller.ts';
import type { StageAccountResponse } from './account-imports.schemas.ts';
import * as imports from './account-imports.repository.ts';
import * as errors from './import-errors.ts';
import type { StagingWriter } from './staging-writer.ts';

// Stage (spec 4.2, D6): the body was validated as account data by the route schema. The upsert is
// one statement, so concurrent stages of one account make one row and a stage racing the create of
// that account either lands before it or is refused after it. The write itself goes through the
// process's StagingWriter (staging-writer.ts), which commits concurrent stages together; this
// service is the same for the HTTP route and the migration jobs' records.

export interface StageResult {
  created: boolean;
  body: StageAccountResponse;
  /** The data as it was stored (a GB postcode in its normal form): what a create that follows must find staged. */
  stored: AccountData;
}

export interface StageDeps { db: Kysely<Database>; staging: StagingWriter }

export async function stageAccount(deps: StageDeps, caller: Caller, data: AccountData): Promise<StageResult> {
  const supplier = await requireCallerSupplier(caller, data.import_supplier, 'import_supplier');
  requireSupplierOpen(supplier, 'import_supplier');
  const ext = data.external_account_number;
  const body = { import_supplier: supplier.code, external_account_number: ext };

  // Stored as the account will keep it: a GB postcode in its normal form.
  const stored = withNormalisedPostcodes(data);
  const outcome = await deps.staging.stage({ supplierId: supplier.id, externalAccountNumber: ext, data: stored });
  if (!('refused' in outcome)) return { created: outcome.inserted, body, stored };

  // The upsert's guard refused: the account is imported or marked to skip.
  const state = await imports.findImportState(deps.db, supplier.id, ext);
  if (state) errors.requireNotImportedOrSkipped(ext, state);
  throw new Error(`staging ${ext} changed no row, yet the account is neither imported nor skipped`);
}
