import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { findCallerSupplier } from '../../http/auth.ts';
import { AppError } from '../../http/errors.ts';
import type { Caller } from '../auth/token.service.ts';
import type { AccountStatusResponse } from './account-imports.schemas.ts';
import { findImportState, findLastFailedAttempt } from './account-imports.repository.ts';
import { isAccountLocked } from './import-locks.repository.ts';

// Status (spec 4.8, D6): COMPLETED once an account exists, IN_PROGRESS while a create holds the
// account's advisory lock (seen in pg_locks, so it needs no state that a crash could leave behind),
// UNKNOWN otherwise. An unknown supplier, another organisation's and an unknown account all answer the
// same 404 (D3).
export async function accountStatus(db: Kysely<Database>, caller: Caller, code: string, ext: string): Promise<AccountStatusResponse> {
  const supplier = await findCallerSupplier(db, caller, code);
  const state = supplier ? await findImportState(db, supplier.id, ext) : undefined;
  if (!supplier || !state) {
    throw new AppError('account_not_found', `No import process for account "${ext}" of import supplier "${code}".`);
  }
  const lastError = await findLastFailedAttempt(db, supplier.id, ext);
  const status = state.service_account_number !== null ? 'COMPLETED'
    : (await isAccountLocked(db, state.id)) ? 'IN_PROGRESS' : 'UNKNOWN';
  return {
    status,
    service_account_number: state.service_account_number ?? '',
    last_error: lastError ? { code: lastError.error_code ?? 'internal_error', detail: lastError.error_detail ?? '' } : null,
  };
}
