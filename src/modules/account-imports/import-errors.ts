import { AppError } from '../../core/errors.ts';

// The account-state refusals shared by staging and creating (D6). Each points at the field that
// named the account.
const ATTR = 'external_account_number';

export function accountNotStaged(ext: string): AppError {
  return AppError.field('account_not_staged', `No staged data for account "${ext}"; stage it with create-or-update first.`, ATTR);
}

export function accountAlreadyImported(ext: string, serviceAccountNumber: string): AppError {
  return AppError.field('account_already_imported', `Account "${ext}" is already imported as ${serviceAccountNumber}.`, ATTR, {
    external_account_number: ext,
    service_account_number: serviceAccountNumber,
  });
}

export function accountMarkedToSkip(ext: string): AppError {
  return AppError.field('account_marked_to_skip', `Account "${ext}" is marked to be skipped and cannot be staged or created.`, ATTR);
}

export function accountImportInProgress(ext: string): AppError {
  return AppError.field('account_import_in_progress', `Another create of account "${ext}" is running; check its status, then retry if needed.`, ATTR);
}

/** Refuses an account that is imported or marked to skip. */
export function requireNotImportedOrSkipped(
  ext: string, state: { skipped: boolean; service_account_number: string | null },
): void {
  if (state.service_account_number !== null) throw accountAlreadyImported(ext, state.service_account_number);
  if (state.skipped) throw accountMarkedToSkip(ext);
}
