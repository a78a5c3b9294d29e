import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { JobId, RECORD_OUTCOMES, RecordResult } from './migration-jobs.schemas.ts';

// The lead's views of one job: its records found by account, outcome and error code, and the pace
// its records finished at, on a time scale that fits the job.

export const MAX_SEARCH_PAGE = 500;

export const RecordSearchQuery = Type.Object({
  external_account_number: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only the record of this account (exact).' })),
  outcome: Type.Optional(Choice(RECORD_OUTCOMES, 'Only records with this outcome.')),
  error_code: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only records whose first error has this code (e.g. invalid_phone_number, duplicate_in_file, parse_error).' })),
  after_line: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, format: 'int32', description: 'The next page: records after this line (the last answer\'s next_after_line).' })),
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SEARCH_PAGE, format: 'int32', description: 'Records per page (default 50).' })),
}, { additionalProperties: false });
export type RecordSearchQuery = Static<typeof RecordSearchQuery>;

export const RecordSearchPage = Type.Object({
  job_id: JobId,
  records: Type.Array(RecordResult, { description: 'The matching records in line order, each as GET migration-jobs/<id>/records/ gives it.' }),
  next_after_line: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'Pass as after_line for the next page; null on the last page.' }),
}, { $id: 'MigrationJobRecordSearch' });
export type RecordSearchPage = Static<typeof RecordSearchPage>;

/** The bucket widths a job's pace is shown in, narrowest first: minutes while it runs, hours or days over a long migration. */
export const BUCKET_SECONDS = [60, 300, 900, 3600, 21_600, 86_400] as const;
export const MAX_BUCKETS = 120;

export const RateBucket = Type.Object({
  start: Type.String({ description: 'The start of the bucket, UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  succeeded: Type.Integer({ description: 'Records that finished succeeded or skipped in the bucket.' }),
  failed: Type.Integer({ description: 'Records that finished failed or cancelled in the bucket.' }),
});

export const JobRate = Type.Object({
  job_id: JobId,
  bucket_seconds: Type.Integer({ description: `The width of each bucket: the narrowest of ${BUCKET_SECONDS.join(', ')} seconds that shows the job in at most ${MAX_BUCKETS} buckets.` }),
  buckets: Type.Array(RateBucket, {
    maxItems: MAX_BUCKETS,
    description: 'Every bucket from the first finished record to the last (to now while the job is under way), oldest first, empty ones included; none before a record finishes.',
  }),
}, { $id: 'MigrationJobRate' });
export type JobRate = Static<typeof JobRate>;
