import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../core/errors.ts';
import type { Caller } from '../../core/caller.ts';
import type { AccountStatusResponse } from './account-imports.schemas.ts';
import { findStatusRow } from './account-imports.repository.ts';

// Status (spec 4.8, D6): COMPLETED once an account exists, IN_PROGRESS while a create holds the
// account's advisory lock (seen in pg_locks, so it needs no state that a crash could leave behind),
// UNKNOWN otherwise. An unknown supplier, another organisation's and an unknown account all answer the
// same 404 (D3). One query answers it all: this endpoint is polled by migration scripts.
export async function accountStatus(db: Kysely<Database>, caller: Caller, code: string, ext: string): Promise<AccountStatusResponse> {
  const row = await findStatusRow(db, caller.organisationId, code, ext);
  if (!row) {
    throw new AppError('account_not_found', `No import process for account "${ext}" of import supplier "${code}".`);
  }
  const status = row.service_account_number !== null ? 'COMPLETED' : row.in_progress ? 'IN_PROGRESS' : 'UNKNOWN';
  return {
    status,
    service_account_number: row.service_account_number ?? '',
    // Once imported, a failed attempt is history (a repeated create answers account_already_imported
    // and records it): the account's status has no error to report.
    last_error: status !== 'COMPLETED' && row.failed ? { code: row.error_code ?? 'internal_error', detail: row.error_detail ?? '' } : null,
  };
}
