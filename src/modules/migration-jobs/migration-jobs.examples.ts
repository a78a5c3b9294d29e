import { EXAMPLE_ACCOUNT } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { CreateJobBody, Job, RecordResult, UpdateJobBody, UploadReply } from './migration-jobs.schemas.ts';
import type { ExceptionLine, ReconciliationReport } from './reconciliation.schemas.ts';
import type { JobRate, RecordSearchPage } from './job-views.schemas.ts';

// OpenAPI examples: a job for the demo supplier, one record of another demo account.

export const EXAMPLE_JOB_ID = '6f1c2a7e-3b4d-4c5e-9f60-7a8b9c0d1e2f';

export const CREATE_JOB: CreateJobBody = {
  import_supplier: DEMO.supplier, operations_team_name: DEMO.team,
  control_totals: { accounts: 1, notes: 1, transactions: 0, balance_total: '0.00' },
};

const RECORD_ACCOUNT = JSON.parse(JSON.stringify(EXAMPLE_ACCOUNT).replaceAll('DEMO-0001', 'DEMO-0002')) as typeof EXAMPLE_ACCOUNT;

/** One record per line; only `account` is required. */
export const UPLOAD_RECORDS = `${JSON.stringify({ account: RECORD_ACCOUNT, notes: [{ body: 'Migrated from billing-v2.' }] })}\n`;

export const UPLOADED: UploadReply = { received: 1, total_records: 1 };

export const JOB: Job = {
  id: EXAMPLE_JOB_ID, import_supplier: DEMO.supplier, operations_team_name: DEMO.team, dry_run: false, on_drift: 'warn', state: 'open', paused: false,
  max_records_per_minute: null,
  not_before: null, not_after: null, created_at: '2025-03-04T10:20:00Z', started_at: null, finished_at: null,
  counts: { total: 1, pending: 1, running: 0, succeeded: 0, skipped: 0, failed: 0, cancelled: 0 },
  records_with_warnings: 0, errors_by_code: [], records_per_minute: 0, eta_seconds: null,
};

/** The uploaded job, throttled before it starts. */
export const THROTTLE_JOB: UpdateJobBody = { max_records_per_minute: 600 };

export const RECORD_RESULT: RecordResult = {
  line: 1, external_account_number: 'DEMO-0002', outcome: 'failed', step: 'account', created: null, service_account_number: null,
  dry_run: false, errors: [{ code: 'invalid_phone_number', attr: 'account.customers.0.mobile', detail: 'Enter a valid phone number in international format with a leading +.' }],
  warnings: [], finished_at: '2025-03-04T10:21:07Z',
};

export const JOB_NOT_FOUND = { detail: `No migration job "${EXAMPLE_JOB_ID}".`, code: 'not_found' };
export const JOB_NOT_OPEN = {
  detail: `Migration job "${EXAMPLE_JOB_ID}" is running: records can only be added while it is open.`, code: 'migration_job_not_open',
};

export const UPLOAD_CUT_OFF = {
  detail: 'No data arrived for 60 s: the upload was cut off. The 5000 records received before are kept; the job holds 5000, send the lines after those.',
  code: 'request_timeout', received: 5000, total_records: 5000,
};
export const UPLOAD_TOO_LARGE = {
  detail: 'An upload is at most 1073741824 bytes; the records before the limit are kept.', code: 'payload_too_large',
  received: 250000, total_records: 250000,
};

export const ACTION_REFUSED = {
  start: { detail: `Migration job "${EXAMPLE_JOB_ID}" has no records: upload some before starting it.`, code: 'migration_job_empty' },
  cancel: { detail: `Migration job "${EXAMPLE_JOB_ID}" is already completed.`, code: 'migration_job_finished' },
  retry: { detail: `Migration job "${EXAMPLE_JOB_ID}" is running: only a completed or cancelled job can be retried.`, code: 'migration_job_not_finished' },
  pause: { detail: `Migration job "${EXAMPLE_JOB_ID}" is already completed.`, code: 'migration_job_finished' },
  resume: { detail: `Migration job "${EXAMPLE_JOB_ID}" was not paused.`, code: 'migration_job_not_paused' },
};

export const THROTTLE_REFUSED = { detail: 'The request failed validation.', code: 'invalid', errors: [
  { detail: 'Ensure this value is greater than or equal to 1.', code: 'min_value', attr: 'max_records_per_minute' }] };

export const RECONCILIATION: ReconciliationReport = {
  job_id: EXAMPLE_JOB_ID, import_supplier: DEMO.supplier, generated_at: '2025-03-04T11:00:00Z', job_state: 'completed',
  file: { sha256: '8e738aac00a554e7c035e04c8962c6d74a32eed2f5e1473c3cd14f8fd0115934', lines: 2000, unparsable_lines: 1 },
  uploaded_by: 'ak_3f2a1b0c9d8e', started_at: '2025-03-04T10:21:00Z', finished_at: '2025-03-04T10:30:12Z',
  measures: [
    { measure: 'accounts', control: 2000, file: 2000, migrated: 1998, verdict: 'differs' },
    { measure: 'customers', control: null, file: 2600, migrated: 2597, verdict: 'differs' },
    { measure: 'supply_points', control: null, file: 3100, migrated: 3098, verdict: 'differs' },
    { measure: 'meters', control: null, file: 3100, migrated: 3098, verdict: 'differs' },
    { measure: 'statements', control: 2000, file: 2000, migrated: 1998, verdict: 'differs' },
    { measure: 'transactions', control: 40000, file: 40000, migrated: 39959, verdict: 'differs' },
    { measure: 'notes', control: null, file: 4000, migrated: 3996, verdict: 'differs' },
    { measure: 'payment_instructions', control: null, file: 0, migrated: 0, verdict: 'not_declared' },
    { measure: 'balance_total', control: '-1204.50', file: '-1204.50', migrated: '-1188.20', verdict: 'differs' },
    { measure: 'statements_gross_total', control: '241000.00', file: '241000.00', migrated: '240759.00', verdict: 'differs' },
  ],
  verdict: 'differs', exceptions: 4,
};

export const RECONCILIATION_EXCEPTION: ExceptionLine = {
  line: 97, external_account_number: 'DEMO-0097', measure: 'not_migrated', file: null, migrated: null,
};

export const RECORD_SEARCH: RecordSearchPage = { job_id: EXAMPLE_JOB_ID, records: [RECORD_RESULT], next_after_line: null };

export const JOB_RATE: JobRate = {
  job_id: EXAMPLE_JOB_ID, bucket_seconds: 60,
  buckets: [
    { start: '2025-03-04T10:21:00Z', succeeded: 212, failed: 3 },
    { start: '2025-03-04T10:22:00Z', succeeded: 240, failed: 1 },
    { start: '2025-03-04T10:23:00Z', succeeded: 0, failed: 0 },
    { start: '2025-03-04T10:24:00Z', succeeded: 198, failed: 0 },
  ],
};
