import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Clock } from '../../core/clock.ts';
import type { JobQueue } from '../../queue/queue.ts';
import type { Events } from '../events/index.ts';

import * as repo from './migration-jobs.repository.ts';
import { finishFailedRecord } from './record-failed-event.ts';
import { runRecord, type PipelineDeps, type RecordSteps } from './record-pipeline.ts';
import { runChunk } from './record-chunk.ts';
import { isActive } from './job-states.ts';
import { endJob } from './job-end.ts';
import {
  DISPATCH_QUEUE, RECORD_DEAD_QUEUE, RECORD_QUEUE, WINDOW_QUEUE, defineMigrationQueues, recordPolicy, sendDispatch,
  type JobsWorkerConfig, type RecordJobData,
} from './job-queues.ts';

/** The store and the process's events: what ending a record or a job writes with. */
type JobStore = { db: Kysely<Database>; events: Events };

/** How soon the dispatcher looks again while records are left: sooner when the last look sent some. */
const TOP_UP_AFTER_MS = 500;
const RECHECK_FULL_AFTER_MS = 2000;
/**
 * Record jobs one fetch takes at most (each runs and completes on its own): fewer of the queue's own
 * statements per record when several workers are free at once.
 */
const RECORD_BATCH = 2;

export interface JobsWorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export async function startMigrationWorkers({ db, events, queue, clock, config, logger, concurrency, ...steps }: RecordSteps & {
  db: Kysely<Database>; events: Events; queue: JobQueue; clock: Clock; config: JobsWorkerConfig; logger: JobsWorkerLogger; concurrency: number;
}): Promise<{ stop(): Promise<void> }> {
  await defineMigrationQueues(queue, config);
  const deps: PipelineDeps = { ...steps, db, events, queue, clock, log: logger };
  await queue.work<{ job_id: string }>(DISPATCH_QUEUE, { concurrency: 1, pollingIntervalSeconds: 0.5 }, async (job) => {
    await dispatch(deps, queue, job.data.job_id, config);
  });
  await queue.work<RecordJobData>(RECORD_DEAD_QUEUE, { concurrency: 1, pollingIntervalSeconds: 1 }, async (job) => {
    for (const line of job.data.lines) await giveUpRecord(deps, { job_id: job.data.job_id, line }, config);
  });
  await queue.work<{ job_id: string }>(WINDOW_QUEUE, { concurrency: 1, pollingIntervalSeconds: 1 }, async (job) => {
    await closeWindow(deps, job.data.job_id);
  });
  await queue.work<RecordJobData>(RECORD_QUEUE, { concurrency, pollingIntervalSeconds: 0.5, batchSize: RECORD_BATCH, shared: true }, async (job) => {
    await runRecordJob(deps, config, logger, job.data, job);
  });
  return {
    async stop() {
      await Promise.all([RECORD_QUEUE, DISPATCH_QUEUE, WINDOW_QUEUE, RECORD_DEAD_QUEUE].map((name) => queue.offWork(name)));
    },
  };
}

/**
 * Tops the job's records on the queue up to its window (JOB_DISPATCH_WINDOW), in line order, in one transaction with
 * their `enqueued` marks; while records are left to send, the same transaction queues the next look.
 * The job ends here only when it had nothing to run (every line judged at upload).
 */
export async function dispatch(store: JobStore, queue: JobQueue, jobId: string, config: JobsWorkerConfig): Promise<void> {
  const { db } = store;
  const left = await db.transaction().execute(async (trx) => {
    // The queue's fetch reads every waiting job of its queue to pick the oldest, so a whole book sent
    // at once made each fetch dearer the bigger the job (2.3 ms a fetch at 3,000 records, and 10,000
    // records ran 9% slower); a window keeps it flat, and the records of two jobs take turns instead
    // of the later job waiting behind the whole of the first.
    const window = config.jobDispatchWindow;
    const room = window - await repo.countInFlight(trx, jobId, window);
    // A paused job sends nothing (this keeps looking, so resume needs no new dispatch job); a throttled
    // one sends what its bucket holds.
    const allowance = await repo.takeDispatchAllowance(trx, jobId, Math.max(0, room));
    const lines = allowance.records > 0 ? await repo.takeUnsent(trx, jobId, allowance.records) : [];
    const org = lines.length > 0 ? await repo.organisationOf(trx, jobId) : 0;
    await queue.sendMany<RecordJobData>(RECORD_QUEUE, chunksOf(lines, config).map((chunk): RecordJobData => ({ job_id: jobId, lines: chunk, org })),
      { trx, ...recordPolicy(config) });
    const more = await repo.hasUnsent(trx, jobId);
    if (more) {
      const after = nextLookAfterMs(lines.length > 0, allowance.nextTokenMs);
      await sendDispatch(queue, jobId, { trx, startAfter: after / 1000 });
    }
    return more;
  });
  if (left) return;
  // Nothing left to send. The dispatcher keeps looking, every RECHECK_FULL_AFTER_MS, until the job has
  // ended: a record that saw others pending does not look for the job's end (finishRecord), and
  // those others may have been cancelled, or finished beside it, without it seeing; this ends such a job.
  if (!(await finishIfDone(store, jobId))) {
    await sendDispatch(queue, jobId, { startAfter: RECHECK_FULL_AFTER_MS / 1000 });
  }
}

/**
 * The records sent in one look, in chunks of at most JOB_CHUNK_RECORDS, and spread over this
 * instance's workers when the look sent fewer than that many per worker.
 */
function chunksOf(lines: number[], config: JobsWorkerConfig): number[][] {
  const size = Math.max(1, Math.min(config.jobChunkRecords, Math.ceil(lines.length / Math.max(1, config.workerConcurrency))));
  const chunks: number[][] = [];
  for (let i = 0; i < lines.length; i += size) chunks.push(lines.slice(i, i + size));
  return chunks;
}

/** Sooner after a look that sent records; a throttled job when its bucket holds the next record. */
function nextLookAfterMs(sent: boolean, nextTokenMs: number | null): number {
  const after = sent ? TOP_UP_AFTER_MS : RECHECK_FULL_AFTER_MS;
  return nextTokenMs === null ? after : Math.min(RECHECK_FULL_AFTER_MS, Math.max(TOP_UP_AFTER_MS, nextTokenMs));
}

export async function closeWindow(store: JobStore, jobId: string): Promise<void> {
  await repo.cancelPending(store.db, jobId, [WINDOW_CLOSED]);
  await finishIfDone(store, jobId);
}

const WINDOW_CLOSED = { code: 'migration_window_closed', attr: 'non_field_errors', detail: 'The job\'s not_after passed before this record started.' };

class RetryLater extends Error {}

async function runRecordJob(
  deps: PipelineDeps, config: JobsWorkerConfig, logger: JobsWorkerLogger, data: RecordJobData,
  { retryCount, retryLimit }: { retryCount: number; retryLimit: number },
): Promise<void> {
  const { db, queue } = deps;
  // The job, its supplier and the records' claims in one statement; the claims are made only while
  // the job is under way and neither it nor its supplier is paused.
  const { job, records } = await repo.claimRecordsWithJob(db, data.job_id, data.lines);
  if (!job || !isActive(job.state)) return;
  if (job.supplier_status === 'paused' || job.paused) {
    // Records of this queue job still running were left so by a worker that stopped (this is their
    // queue job, taken again): they wait as pending ones do, or, after a cancel, are cancelled and
    // the job can end. Left running, a cancelled paused job never ended.
    await repo.settleStranded(db, job.id, data.lines, job.cancel_requested);
    if (job.cancel_requested) {
      await finishIfDone(deps, job.id);
      return;
    }
    // The records wait without using up their retries: a new queue job for later replaces this one.
    await queue.send(RECORD_QUEUE, data, { startAfter: config.jobPauseRecheckSeconds, ...recordPolicy(config) });
    return;
  }
  if (records.length === 0) return;
  if (job.state !== 'running') await repo.markRunning(db, job.id);
  if (job.not_after && job.not_after.getTime() <= deps.clock.nowMs()) {
    for (const record of records) {
      await repo.finishRecord(db, job.id, record.line, { outcome: 'cancelled', step: null, created: null, serviceAccountNumber: null, errors: [WINDOW_CLOSED] });
    }
    await finishIfDone(deps, job.id);
    return;
  }
  if (records.length > 1) {
    // The chunk's new, clean records are written together. The others go back on the queue as
    // record jobs of one line each, in one transaction with their hand-back: they run one at a time
    // on any worker, each with its own time limit and retries, as every record did before chunks.
    const { succeeded, rest } = await runChunk(deps, job, records);
    // A pre-flight's records that passed are succeeded here, creating nothing (a real run's were in the set's own transaction).
    if (job.dry_run) await repo.finishSucceeded(db, job.id, succeeded.map((r) => ({ line: r.line, serviceAccountNumber: null })));
    if (rest.length > 0) {
      await db.transaction().execute(async (trx) => {
        await repo.handBack(trx, job.id, rest.map((r) => r.line));
        await queue.sendMany<RecordJobData>(RECORD_QUEUE, rest.map((r) => ({ ...data, lines: [r.line] })), { trx, ...recordPolicy(config) });
      });
      return;
    }
    await finishIfDone(deps, job.id);
    return;
  }
  const record = records[0]!;
  const result = await runRecord(deps, job, record);
  // The job's own limit, not this instance's JOB_RETRY_LIMIT: instances configured differently must
  // agree on which try is the last, or the last one would throw into the dead-letter queue.
  if (result.kind === 'transient' && retryCount < retryLimit) {
    await repo.releaseRecord(db, job.id, record.line, { created: result.created, serviceAccountNumber: result.serviceAccountNumber });
    logger.warn({ job_id: job.id, line: record.line, code: result.errors[0]?.code, retry: retryCount + 1 }, 'migration record hit a transient failure; the queue retries it');
    throw new RetryLater(`${result.errors[0]?.code ?? 'transient'}: retried later`);
  }
  const outcome = result.kind === 'transient' ? 'failed' : result.outcome;
  const finished = { created: result.created, serviceAccountNumber: result.serviceAccountNumber, errors: result.errors, warnings: result.warnings };
  const { othersPending } = outcome === 'failed'
    ? await finishFailedRecord(deps, { id: job.id, supplierId: job.supplier_id }, {
      line: record.line, externalAccountNumber: record.external_account_number, step: result.step ?? 'account', ...finished,
    })
    : await repo.finishRecord(db, job.id, record.line, { outcome, step: result.step, ...finished });
  // Records still pending: this is not the job's end, and one round trip less a record. Seen
  // without: the job may be ending, so it is looked at again after this commit.
  if (!othersPending) await finishIfDone(deps, job.id);
}

/**
 * A record whose queue job failed for good outside the pipeline (its worker died, or the store was
 * away, on every try) fails with service_unavailable instead of staying running for ever.
 */
async function giveUpRecord(store: JobStore, data: { job_id: string; line: number }, config: JobsWorkerConfig): Promise<void> {
  const { db } = store;
  const record = await repo.claimRecord(db, data.job_id, data.line);
  const job = record ? await repo.findJob(db, data.job_id) : undefined;
  if (!record || !job) return;
  await finishFailedRecord(store, { id: job.id, supplierId: job.supplier_id }, {
    line: data.line, externalAccountNumber: record.external_account_number, step: record.step ?? 'account',
    created: record.created, serviceAccountNumber: record.service_account_number,
    errors: [{ code: 'service_unavailable', attr: 'non_field_errors', detail: `The record could not be run after ${config.jobRetryLimit + 1} tries (a worker stopped or the store was unavailable).` }],
  });
  await finishIfDone(store, data.job_id);
}

/**
 * Ends the job once no record is pending or running: completed, or cancelled after a cancel; true
 * when the job has ended (now or before). Called after the record's own commit, so of two workers
 * finishing the last two records at once the later one sees both finished. A first look without the
 * job row's lock settles the common case (records left) without a transaction; only a job that may
 * be done takes the lock and looks again.
 */
export async function finishIfDone({ db, events }: JobStore, jobId: string): Promise<boolean> {
  const before = await repo.hasUnfinished(db, jobId);
  if (before.pending || before.running) return false;
  return db.transaction().execute(async (trx) => {
    const job = await repo.lockJob(trx, jobId);
    if (!job || !isActive(job.state)) return true;
    const left = await repo.hasUnfinished(trx, jobId);
    if (left.pending || left.running) return false;
    await endJob(events, trx, job, job.cancel_requested ? 'cancelled' : 'completed');
    return true;
  });
}
