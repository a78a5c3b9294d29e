import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { RECORD_COLUMNS, type RecordRow } from './migration-jobs.repository.ts';
import type { RecordOutcome } from './migration-jobs.schemas.ts';

// The lead's views of a job (job-views.service.ts): from the record indexes of migration 005
// ((job_id, outcome, line), (job_id, external_account_number), (job_id, finished_at)) and 028
// ((job_id, first error's code, line), for the records with an error).
type Db = Kysely<Database>;

export interface RecordFilter { externalAccountNumber?: string; outcome?: RecordOutcome; errorCode?: string }

/** One keyset page (by line) of the job's records matching every filter given. */
export async function searchRecords(db: Db, jobId: string, filter: RecordFilter, afterLine: number, limit: number): Promise<RecordRow[]> {
  const { rows } = await sql<RecordRow>`SELECT ${RECORD_COLUMNS} FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND line > ${afterLine}
      ${filter.externalAccountNumber === undefined ? sql`` : sql`AND external_account_number = ${filter.externalAccountNumber}`}
      ${filter.outcome === undefined ? sql`` : sql`AND outcome = ${filter.outcome}`}
      ${filter.errorCode === undefined ? sql`` : sql`AND errors <> '[]'::jsonb AND errors->0->>'code' = ${filter.errorCode}`}
    ORDER BY line LIMIT ${limit}`.execute(db);
  return rows;
}

/** When the job's first and last records finished (epoch seconds), or nulls before any has. */
export async function finishedSpan(db: Db, jobId: string): Promise<{ first: number | null; last: number | null }> {
  const { rows } = await sql<{ first: number | null; last: number | null }>`SELECT
      floor(extract(epoch FROM min(finished_at)))::int8 AS first, floor(extract(epoch FROM max(finished_at)))::int8 AS last
    FROM migration_job_records WHERE job_id = ${jobId}::uuid AND finished_at IS NOT NULL`.execute(db);
  return rows[0] ?? { first: null, last: null };
}

/** Records finished per bucket of `seconds` (counted on the epoch, so buckets are UTC), as (bucket number, counts). */
export async function finishedPerBucket(db: Db, jobId: string, seconds: number): Promise<Array<{ b: number; succeeded: number; failed: number }>> {
  const { rows } = await sql<{ b: number; succeeded: number; failed: number }>`SELECT
      floor(extract(epoch FROM finished_at) / ${seconds})::int8 AS b,
      count(*) FILTER (WHERE outcome IN ('succeeded', 'skipped'))::int AS succeeded,
      count(*) FILTER (WHERE outcome IN ('failed', 'cancelled'))::int AS failed
    FROM migration_job_records WHERE job_id = ${jobId}::uuid AND finished_at IS NOT NULL
    GROUP BY 1 ORDER BY 1`.execute(db);
  return rows;
}
