import type { Transaction } from 'kysely';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import type { ForOrganisation, JobQueue } from '../../queue/queue.ts';
import type { JobRow } from './migration-jobs.repository.ts';

// The migration jobs on the queue (D11). Three queues:
// - migration_dispatch {job_id}: keeps up to JOB_DISPATCH_WINDOW of the job's pending records on the
//   record queue (each record marked `enqueued` with its job, so a crash mid-way resumes where it
//   was), and comes back while records are left to send;
// - migration_record {job_id, lines, org}: runs a chunk of records (record-chunk.ts; the records it
//   cannot write in a set go back as record jobs of one line, record-pipeline.ts) on any worker of any
//   instance. An instance's workers are shared out between organisations (`org`, the job's
//   organisation): in turn, and none holds more than half of them while another has records waiting
//   (queue/shared-work.ts), so one organisation's records stuck on a vendor do not stall the others'.
//   Transient failures are retried by the queue with backoff; a worker killed mid-record
//   leaves the queue job active until it expires, then it runs again and the record is claimed again;
// - migration_window {job_id}: at not_after, cancels the records not started.

export const DISPATCH_QUEUE = 'migration_dispatch';
export const RECORD_QUEUE = 'migration_record';
export const WINDOW_QUEUE = 'migration_window';
/** Record jobs that failed for good outside the pipeline (the store gone for all their retries). */
export const RECORD_DEAD_QUEUE = 'migration_record_dead';

/**
 * The module's tables a running job rewrites on every record (sent, claimed, finished) and, for its
 * counters, on every chunk: on the embedded store, which has no autovacuum, the workers vacuum them
 * (queue/store-vacuum.ts).
 */
export const CHURNED_TABLES: readonly string[] = ['migration_job_records', 'migration_job_record_counts'];

/**
 * A dispatcher's look takes well under a second; one held by an instance that died is given to
 * another after this long (sent with every dispatch job: the queue's own default is what the first
 * instance set). A look that did run this long and is looked at again does no harm: a look is one
 * transaction, holding the job's row.
 */
const DISPATCH_EXPIRY = { expireInSeconds: 60 };

/**
 * A record job's data: the job's records of `lines` (a chunk, run set-based, record-chunk.ts; one line
 * when it is a record's retry), and `org`, the job's organisation, whose share of the workers it counts in.
 */
export interface RecordJobData extends ForOrganisation { job_id: string; lines: number[] }

export type JobsWorkerConfig = Pick<Config, 'processConcurrencyLimit' | 'jobRetryLimit' | 'jobRetryDelaySeconds'
  | 'jobRecordTimeoutSeconds' | 'jobPauseRecheckSeconds' | 'jobDispatchWindow' | 'jobChunkRecords' | 'workerConcurrency'>;

export async function defineMigrationQueues(queue: JobQueue, config: JobsWorkerConfig): Promise<void> {
  await queue.define(DISPATCH_QUEUE, { retryLimit: 1000, retryDelay: 5, retryBackoff: false, ...DISPATCH_EXPIRY });
  await queue.define(WINDOW_QUEUE, { retryLimit: 1000, retryDelay: 5, retryBackoff: false, expireInSeconds: 300 });
  await queue.define(RECORD_DEAD_QUEUE, { retryLimit: 1000, retryDelay: 5, retryBackoff: false, expireInSeconds: 300 });
  await queue.define(RECORD_QUEUE, recordPolicy(config));
}

/** Sent with every record job (not only as the queue's default, which the first instance fixed). */
export function recordPolicy(config: Pick<JobsWorkerConfig, 'jobRetryLimit' | 'jobRetryDelaySeconds' | 'jobRecordTimeoutSeconds'>) {
  return {
    retryLimit: config.jobRetryLimit, retryDelay: config.jobRetryDelaySeconds, retryBackoff: true,
    expireInSeconds: config.jobRecordTimeoutSeconds, deadLetter: RECORD_DEAD_QUEUE,
  };
}

/** Written in the transaction that starts (or retries) the job: dispatch, and the window's end. */
export async function requestDispatch(
  queue: JobQueue, trx: Transaction<Database>, job: Pick<JobRow, 'id' | 'not_before' | 'not_after'>, now: Date,
): Promise<void> {
  await sendDispatch(queue, job.id, { trx, startAfter: job.not_before && job.not_before > now ? job.not_before : undefined });
  if (job.not_after) await queue.send(WINDOW_QUEUE, { job_id: job.id }, { trx, startAfter: job.not_after });
}

/**
 * The dispatcher's next look at a job, with the dispatch queue's policy (its expiry is sent with every
 * job, not only as the queue's default, which the first instance to start fixed): at `startAfter`
 * (an instant, or seconds from now by the store's clock), inside `trx` when given.
 */
export async function sendDispatch(
  queue: JobQueue, jobId: string, { trx, startAfter }: { trx?: Transaction<Database> | undefined; startAfter?: Date | number | undefined } = {},
): Promise<void> {
  await queue.send(DISPATCH_QUEUE, { job_id: jobId }, { trx, startAfter, ...DISPATCH_EXPIRY });
}
