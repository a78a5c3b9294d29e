// The event types of D13 and the data each carries. One list: the feed's schema, the webhook
// endpoints' filter and the CLI's --events check all read it.
export const EVENT_TYPES = [
  'import_process.staged',
  'import_process.completed',
  'import_process.failed',
  'import_process.dry_run_completed',
  'import_process.dry_run_failed',
  'post_import.completed',
  'migration_job.completed',
  'migration_job.cancelled',
  'migration_record.failed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const POST_IMPORT_KINDS = ['notes', 'transactions', 'statements', 'payment_instruction'] as const;
export type PostImportKind = (typeof POST_IMPORT_KINDS)[number];

export interface EventError { code: string; detail: string; attr: string | null }

/** What `data` holds for each type (D13). */
export interface EventDataByType {
  'import_process.staged': { first_staging: boolean };
  'import_process.completed': { service_account_number: string; account_created_at: string };
  'import_process.failed': { error: EventError };
  'import_process.dry_run_completed': Record<string, never>;
  'import_process.dry_run_failed': { error: EventError };
  'post_import.completed': { kind: PostImportKind; added: number; already_existing: number };
  'migration_job.completed': { job_id: string; counts: Record<string, number> };
  'migration_job.cancelled': { job_id: string; counts: Record<string, number> };
  'migration_record.failed': {
    job_id: string; line: number; external_account_number: string | null; step: string; errors: Array<{ code: string; detail: string; attr: string }>;
  };
}

/** An event about to be written: the supplier by id, the account by external number (null for jobs). */
export type NewEvent = {
  [T in EventType]: { supplierId: number; type: T; externalAccountNumber: string | null; data: EventDataByType[T] }
}[EventType];
