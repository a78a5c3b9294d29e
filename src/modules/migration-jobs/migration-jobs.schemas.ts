import { Type, type Static } from '@sinclair/typebox';
import { Choice, NullableChoice } from '../../schemas/choice.ts';
import { UtcDateTime } from '../../schemas/dates.ts';
import { ImportSupplierCode } from '../../schemas/identifiers.ts';
import { Nullable, RequiredText } from '../../schemas/text.ts';

// Migration jobs (D11): the wire shapes. These schemas make the OpenAPI document the job client
// (import-migrate) is generated from, so every answer is described whole.

export const JOB_STATES = ['open', 'scheduled', 'queued', 'running', 'paused', 'completed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];
// The states a job is stored in, and which of them are active or finished: job-states.ts.

export const RECORD_OUTCOMES = ['pending', 'running', 'succeeded', 'skipped', 'failed', 'cancelled'] as const;
export type RecordOutcome = (typeof RECORD_OUTCOMES)[number];

export const ON_DRIFT = ['warn', 'fail'] as const;
export type OnDrift = (typeof ON_DRIFT)[number];

export const RECORD_STEPS = ['parse', 'account', 'statements', 'transactions', 'notes', 'payment_instruction'] as const;
export type RecordStep = (typeof RECORD_STEPS)[number];

export const JobId = Type.String({ format: 'uuid', description: 'The job id (a UUID).' });

export const MAX_RECORDS_PER_MINUTE = 1_000_000;
const MaxRecordsPerMinute = Type.Integer({
  minimum: 1, maximum: MAX_RECORDS_PER_MINUTE, format: 'int32',
  description: 'At most this many of the job\'s records start a minute, evenly spread; null: as fast as the workers go.',
});

export const COUNT_MEASURES = ['accounts', 'customers', 'supply_points', 'meters', 'statements', 'transactions', 'notes',
  'payment_instructions'] as const;
export const MONEY_MEASURES = ['balance_total', 'statements_gross_total'] as const;
export const MEASURES = [...COUNT_MEASURES, ...MONEY_MEASURES] as const;
export type Measure = (typeof MEASURES)[number];

/** A sum of money as a decimal string: never a JSON number, so no figure passes through a float. */
export const DecimalTotal = Type.String({
  pattern: '^-?[0-9]{1,18}(\\.[0-9]{1,6})?$', maxLength: 26, description: 'A decimal string, e.g. "-1204.50".',
});

const count = (what: string) => Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000_000, format: 'int64', description: `The ${what} of the book.` }));

export const ControlTotals = Type.Object({
  accounts: count('accounts'),
  customers: count('customers'),
  supply_points: count('supply points'),
  meters: count('meters'),
  statements: count('statements'),
  transactions: count('transactions'),
  notes: count('notes'),
  payment_instructions: count('payment instructions'),
  balance_total: Type.Optional({ ...DecimalTotal, description: 'The sum of the book\'s account balances, with the service\'s sign (the account read\'s balance).' }),
  statements_gross_total: Type.Optional({ ...DecimalTotal, description: 'The sum of the gross amounts of the book\'s statements.' }),
}, {
  $id: 'MigrationControlTotals', additionalProperties: false,
  description: 'The legacy system\'s own figures for the book, each optional; reconciliation sets them beside the file\'s and the store\'s.',
});
export type ControlTotals = Static<typeof ControlTotals>;

export const CreateJobBody = Type.Object({
  import_supplier: ImportSupplierCode,
  // As long as a team's name may be (import-admin) and an account's request takes it: 200.
  operations_team_name: RequiredText(200, { description: 'The operations team the accounts are created for.' }),
  dry_run: Type.Optional(Type.Boolean({ description: 'A pre-flight: run every step of every record with the real rules, against the store as it is, and roll each record back. Nothing is written but the job and its results; the real run of the same file gives each record the same outcome.' })),
  not_before: Type.Optional(Nullable(UtcDateTime, 'No record starts before this time (UTC, with Z).')),
  not_after: Type.Optional(Nullable(UtcDateTime, 'Records not started by this time are cancelled with migration_window_closed. Must be after not_before and in the future (invalid_date_range).')),
  max_records_per_minute: Type.Optional(Nullable(MaxRecordsPerMinute)),
  control_totals: Type.Optional(ControlTotals),
  on_drift: Type.Optional(Choice(ON_DRIFT, 'A record whose account is already imported with other data: `warn` (default) adds '
    + '`account_differs` warnings to its result; `fail` fails it at step account with `account_differs`.')),
}, { $id: 'CreateMigrationJobRequest', additionalProperties: false });
export type CreateJobBody = Static<typeof CreateJobBody>;

export const UpdateJobBody = Type.Object({
  max_records_per_minute: Nullable(MaxRecordsPerMinute),
}, { $id: 'UpdateMigrationJobRequest', additionalProperties: false });
export type UpdateJobBody = Static<typeof UpdateJobBody>;

export const JobCounts = Type.Object({
  total: Type.Integer({ description: 'Records uploaded: always the sum of the other counts.' }),
  pending: Type.Integer(), running: Type.Integer(), succeeded: Type.Integer(),
  skipped: Type.Integer(), failed: Type.Integer(), cancelled: Type.Integer(),
});
export type JobCounts = Static<typeof JobCounts>;

export const ErrorCount = Type.Object({
  code: Type.String({ description: 'The code of the first error of failed records.' }),
  count: Type.Integer(),
});

export const Job = Type.Object({
  id: JobId,
  import_supplier: Type.String(),
  operations_team_name: Type.String(),
  dry_run: Type.Boolean(),
  on_drift: Choice(ON_DRIFT, 'What a record whose account is already imported with other data does: warn or fail.'),
  state: Choice(JOB_STATES, 'paused: the job was paused (pause/), or its supplier is paused; records in flight finish, no other starts.'),
  paused: Type.Boolean({ description: 'Paused by pause/ (resume/ undoes it). false while only the supplier is paused.' }),
  max_records_per_minute: Nullable(MaxRecordsPerMinute),
  not_before: Nullable(Type.String(), 'UTC, YYYY-MM-DDTHH:MM:SSZ.'),
  not_after: Nullable(Type.String(), 'UTC, YYYY-MM-DDTHH:MM:SSZ.'),
  created_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  started_at: Nullable(Type.String(), 'When the job was started (UTC).'),
  finished_at: Nullable(Type.String(), 'When the job completed or was cancelled (UTC).'),
  counts: JobCounts,
  records_with_warnings: Type.Integer({ description: 'Records whose result has warnings (an already imported account that differs).' }),
  errors_by_code: Type.Array(ErrorCount, { description: 'The first error of each failed record, by code, largest first.' }),
  records_per_minute: Type.Number({ description: 'Records run to an outcome per minute (cancelled ones not counted) over the last five minutes, or since the job began running when that is shorter (at least half a minute); once the job has ended, its rate at its end.' }),
  eta_seconds: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'Seconds until the records left are done at the current rate; null when unknown, when nothing is left, or when the job is not running (paused, cancelled, or cancelling).' }),
}, { $id: 'MigrationJob' });
export type Job = Static<typeof Job>;

export const JobList = Type.Array(Job, { description: 'Newest first.' });

export const JobPathParams = Type.Object({ job_id: Type.String({ maxLength: 100, description: 'The job id.' }) });
export type JobPathParams = Static<typeof JobPathParams>;

export const MAX_JOB_PAGE_SIZE = 1000;
export const ListJobsQuery = Type.Object({
  import_supplier: ImportSupplierCode,
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_JOB_PAGE_SIZE, format: 'int32', description: 'Page by keyset (default 100); the next page is in the Link header.' })),
  cursor: Type.Optional(Type.String({ maxLength: 500, description: 'The cursor of the next page, from the Link header.' })),
}, { additionalProperties: false });
export type ListJobsQuery = Static<typeof ListJobsQuery>;

export const UploadReply = Type.Object({
  received: Type.Integer({ description: 'Records (non-blank lines) received by this upload.' }),
  total_records: Type.Integer({ description: 'Records of the job so far, across uploads.' }),
}, { $id: 'MigrationJobUpload' });
export type UploadReply = Static<typeof UploadReply>;

export const RecordError = Type.Object({
  code: Type.String(),
  attr: Type.String({ description: 'Dot path from the record: account.customers.0.mobile, transactions.3.amount.' }),
  detail: Type.String(),
});
export type RecordError = Static<typeof RecordError>;

const DriftValue = Type.Unsafe<string | number | boolean | null>({
  type: ['string', 'number', 'boolean', 'null'], description: 'A stored or sent value; null when there is none.',
});

export const RecordWarning = Type.Object({
  code: Type.Literal('account_differs'),
  attr: Type.String({ description: 'Dot path from the record: account.supply_addresses.0.supply_points.0.identifier.' }),
  detail: Type.String(),
  stored: DriftValue,
  sent: DriftValue,
}, { $id: 'MigrationJobRecordWarning' });
export type RecordWarning = Static<typeof RecordWarning>;

export const RecordResult = Type.Object({
  line: Type.Integer({ description: 'The record\'s line number, from 1, across all uploads of the job (blank lines not counted).' }),
  external_account_number: Nullable(Type.String()),
  outcome: Choice(RECORD_OUTCOMES),
  step: NullableChoice(RECORD_STEPS, 'The failing step; null unless failed.'),
  created: Type.Unsafe<boolean | null>({ type: ['boolean', 'null'], description: 'Whether this record created the account (false: it was imported before); null until known.' }),
  service_account_number: Nullable(Type.String()),
  dry_run: Type.Boolean(),
  errors: Type.Array(RecordError),
  warnings: Type.Array(RecordWarning, {
    maxItems: 20, description: 'What differs between the record and the account already imported, field by field (at most 20).',
  }),
  finished_at: Nullable(Type.String(), 'UTC, YYYY-MM-DDTHH:MM:SSZ.'),
}, { $id: 'MigrationJobRecordResult' });
export type RecordResult = Static<typeof RecordResult>;

export const RecordsQuery = Type.Object({
  outcome: Type.Optional(Choice(RECORD_OUTCOMES, 'Only records with this outcome.')),
}, { additionalProperties: false });
export type RecordsQuery = Static<typeof RecordsQuery>;

export const CSV_COLUMNS = ['line', 'external_account_number', 'outcome', 'step', 'service_account_number',
  'error_code', 'error_attr', 'error_detail', 'error_count', 'warning_count', 'first_warning_code'] as const;
