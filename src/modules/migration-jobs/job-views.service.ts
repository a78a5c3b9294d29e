import type { Kysely } from 'kysely';
import type { Caller } from '../../core/caller.ts';
import type { Database } from '../../db/schema.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import * as repo from './job-views.repository.ts';
import { BUCKET_SECONDS, MAX_BUCKETS, type JobRate, type RecordSearchPage, type RecordSearchQuery } from './job-views.schemas.ts';
import { isFinished } from './job-states.ts';
import { requireJob, resultOf } from './migration-jobs.service.ts';

// The lead's views of one job: its records searched, and its pace on a time scale that fits it.

type Db = Kysely<Database>;
const DEFAULT_PAGE = 50;

export async function searchRecords(db: Db, caller: Caller, id: string, query: RecordSearchQuery): Promise<RecordSearchPage> {
  const job = await requireJob(db, caller, id);
  const size = query.page_size ?? DEFAULT_PAGE;
  const rows = await repo.searchRecords(db, job.id,
    { externalAccountNumber: query.external_account_number, outcome: query.outcome, errorCode: query.error_code }, query.after_line ?? 0, size + 1);
  const page = rows.slice(0, size);
  return {
    job_id: job.id,
    records: page.map((row) => resultOf(row, job.dry_run)),
    next_after_line: rows.length > size ? page[page.length - 1]!.line : null,
  };
}

/** The narrowest bucket width that shows `spanSeconds` in at most MAX_BUCKETS buckets (the widest beyond that). */
export function bucketSecondsFor(spanSeconds: number): number {
  return BUCKET_SECONDS.find((w) => Math.floor(spanSeconds / w) + 1 <= MAX_BUCKETS) ?? BUCKET_SECONDS[BUCKET_SECONDS.length - 1]!;
}

export async function jobRate(db: Db, caller: Caller, id: string, now = new Date()): Promise<JobRate> {
  const job = await requireJob(db, caller, id);
  const span = await repo.finishedSpan(db, job.id);
  if (span.first === null || span.last === null) return { job_id: job.id, bucket_seconds: BUCKET_SECONDS[0], buckets: [] };
  // While the job is under way the scale runs to now, so a stall shows as empty buckets.
  const end = isFinished(job.state) ? span.last : Math.max(span.last, Math.floor(now.getTime() / 1000));
  const width = bucketSecondsFor(end - span.first);
  const counted = new Map((await repo.finishedPerBucket(db, job.id, width)).map((row) => [row.b, row]));
  const firstBucket = Math.floor(span.first / width);
  const lastBucket = Math.floor(end / width);
  const buckets = [];
  for (let b = Math.max(firstBucket, lastBucket - MAX_BUCKETS + 1); b <= lastBucket; b++) {
    const row = counted.get(b);
    buckets.push({ start: utcSeconds(new Date(b * width * 1000)), succeeded: row?.succeeded ?? 0, failed: row?.failed ?? 0 });
  }
  return { job_id: job.id, bucket_seconds: width, buckets };
}
