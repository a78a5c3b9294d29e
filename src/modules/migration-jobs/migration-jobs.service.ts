import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import { csvCell } from '../../core/csv.ts';
import { AppError } from '../../core/errors.ts';
import { badCursor, cursorKey, encodeCursor } from '../../core/cursor.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import type { JobQueue } from '../../queue/queue.ts';
import type { Clock } from '../../core/clock.ts';
import { findTeamByName } from '../admin/index.ts';
import type { Caller } from '../../core/caller.ts';
import * as repo from './migration-jobs.repository.ts';
import * as totals from './reconciliation.repository.ts';
import { ResumableSha256 } from '../../core/resumable-sha256.ts';
import {
  CSV_COLUMNS, type CreateJobBody, type Job, type JobState, type ListJobsQuery, type RecordError, type RecordOutcome,
  type RecordResult, type RecordStep, type UpdateJobBody, type UploadReply,
} from './migration-jobs.schemas.ts';
import { ndjsonLines, UploadLimitExceeded } from './ndjson-lines.ts';
import { UploadStalled } from './upload-idle.ts';
import { UploadNotGzip } from './upload-gzip.ts';
import { UploadCutOff } from './upload-read-ahead.ts';
import { endJob, jobFigures, RATE_WINDOW_MINUTES, recentRate } from './job-end.ts';
import { requestDispatch } from './job-queues.ts';
import { parseLine, type ParsedLine } from './record-line.ts';
import { isActive, isFinished } from './job-states.ts';
import { recordFailedEvent } from './record-failed-event.ts';
import type { Events } from '../events/index.ts';

// Migration jobs (D11): create, upload, start, cancel, retry, read. The records themselves are run by
// the queue workers (migration-jobs.worker.ts, record-chunk.ts, record-pipeline.ts).

type Db = Kysely<Database>;

export interface JobsDeps {
  db: Db;
  queue: JobQueue;
  events: Events;
  /** A start's "is its window open yet". */
  clock: Clock;
  config: Pick<Config, 'jobMaxRecords' | 'jobUploadLimitBytes' | 'bodyLimitBytes'>;
}

/** Records written per transaction while uploading: a cut-off upload keeps every batch committed before it. */
export const UPLOAD_BATCH = 500;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const jobNotFound = (id: string) => new AppError('not_found', `No migration job "${id}".`);

export async function requireJob(db: Db, caller: Caller, id: string): Promise<repo.JobRow> {
  const job = UUID.test(id) ? await repo.findJob(db, id, caller.organisationId) : undefined;
  if (!job) throw jobNotFound(id);
  return job;
}

export async function createJob(db: Db, clock: Clock, caller: Caller, body: CreateJobBody): Promise<Job> {
  const supplier = await requireCallerSupplier(caller, body.import_supplier, 'import_supplier');
  // A paused supplier may have jobs (they wait); a complete one takes no more accounts.
  if (supplier.status === 'complete') {
    throw AppError.field('import_supplier_complete', `Import supplier "${supplier.code}" is complete.`, 'import_supplier');
  }
  const team = await findTeamByName(db, body.operations_team_name);
  if (!team) {
    throw AppError.field('operations_team_not_found', `No operations team named "${body.operations_team_name}".`, 'operations_team_name');
  }
  const notBefore = body.not_before ?? null;
  const notAfter = body.not_after ?? null;
  if (notBefore && notAfter && Date.parse(notAfter) <= Date.parse(notBefore)) {
    throw new AppError('invalid', 'The request failed validation.', {
      errors: [{ code: 'invalid_date_range', attr: 'not_after', detail: 'not_after must be after not_before.' }],
    });
  }
  // A window already closed would cancel every record it is given: a time zone written as Z by
  // mistake, most likely, and better said now than found as a job of cancelled records.
  if (notAfter && Date.parse(notAfter) <= clock.nowMs()) {
    throw new AppError('invalid', 'The request failed validation.', {
      errors: [{ code: 'invalid_date_range', attr: 'not_after', detail: `not_after must be in the future; it is ${notAfter} and the time is now ${utcSeconds(clock.now())}.` }],
    });
  }
  const id = randomUUID();
  await repo.insertJob(db, {
    id, supplierId: supplier.id, teamId: team.id, dryRun: body.dry_run === true, onDrift: body.on_drift ?? 'warn', notBefore, notAfter,
    maxRecordsPerMinute: body.max_records_per_minute ?? null, controlTotals: body.control_totals ?? {},
  });
  return jobView(db, (await repo.findJob(db, id))!);
}

/**
 * The job's view. The actions (start, cancel, retry, pause, resume) read it in their own transaction,
 * so their answer is the job as that request left it, not after another request's write.
 */
export async function getJob(db: Db, caller: Caller, id: string): Promise<Job> {
  return jobView(db, await requireJob(db, caller, id));
}

export async function listJobs(db: Db, caller: Caller, query: ListJobsQuery): Promise<{ jobs: Job[]; nextCursor: string | null }> {
  const supplier = await requireCallerSupplier(caller, query.import_supplier, 'import_supplier');
  const size = query.page_size ?? 100;
  const after = query.cursor === undefined ? undefined : decodeJobCursor(query.cursor);
  const rows = await repo.listJobs(db, supplier.id, size + 1, after);
  const page = rows.slice(0, size);
  // One view after another: a page of up to 100 jobs still going, each read by four statements sent
  // together, must not take every connection of the pool from other requests at once.
  const jobs = [];
  for (const row of page) jobs.push(await jobView(db, row));
  const last = page[page.length - 1];
  const nextCursor = rows.length > size && last ? encodeJobCursor(last) : null;
  return { jobs, nextCursor };
}

function encodeJobCursor(row: repo.JobRow): string {
  return encodeCursor([row.created_at.toISOString(), row.id]);
}

function decodeJobCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id] = cursorKey(cursor, 2);
  if (typeof createdAt === 'string' && !Number.isNaN(Date.parse(createdAt)) && typeof id === 'string' && UUID.test(id)) return { createdAt, id };
  throw badCursor();
}

/** The supplier's jobs not completed or cancelled, newest first, as GET migration-jobs/<id>/ shows them. */
export async function unfinishedJobViews(db: Db, supplierId: number): Promise<Job[]> {
  return Promise.all((await repo.unfinishedJobs(db, supplierId)).map((row) => jobView(db, row)));
}

/** The job as D11 shows it: counts and errors by code (kept on its row once it has ended, else read), rate and ETA. */
export async function jobView(db: Db, row: repo.JobRow): Promise<Job> {
  // A job that has ended shows the figures kept when it ended; one still going sums its counters and
  // counts its failures by code and its records with warnings (jobFigures).
  // The reads are independent and sent together (on PostgreSQL, over as many connections of the pool).
  // The rate of a job that has ended is the one it had at its end, kept with its figures (one that
  // ended before it was kept: what finished in the last five minutes, so 0 before long).
  const [figures, perMinute] = await Promise.all([row.final_figures ?? jobFigures(db, row.id),
    row.final_figures?.records_per_minute ?? (mayHaveFinishedRecently(row) ? recentRate(db, row) : 0)]);
  const { counts, errors_by_code: errors, records_with_warnings: warned } = figures;
  const left = counts.pending + counts.running;
  // Records are run at that rate only while the job runs: not while it (or its supplier) is paused, nor once cancelled.
  const running = shownState(row) === 'running' && !row.cancel_requested;
  return {
    id: row.id,
    import_supplier: row.supplier_code,
    operations_team_name: row.operations_team_name,
    dry_run: row.dry_run,
    on_drift: row.on_drift,
    state: shownState(row),
    paused: row.paused,
    max_records_per_minute: row.max_records_per_minute,
    not_before: row.not_before ? utcSeconds(row.not_before) : null,
    not_after: row.not_after ? utcSeconds(row.not_after) : null,
    created_at: utcSeconds(row.created_at),
    started_at: row.started_at ? utcSeconds(row.started_at) : null,
    finished_at: row.finished_at ? utcSeconds(row.finished_at) : null,
    counts,
    records_with_warnings: warned,
    errors_by_code: errors,
    records_per_minute: perMinute,
    eta_seconds: running && left > 0 && perMinute > 0 ? Math.ceil((left / perMinute) * 60) : null,
  };
}

/**
 * Whether any record of the job may have finished within the rate's window: not when the job ended
 * before it (its records finish before it does), with a minute to spare for the store's clock.
 */
function mayHaveFinishedRecently(row: repo.JobRow): boolean {
  return row.finished_at === null || Date.now() - row.finished_at.getTime() < (RATE_WINDOW_MINUTES + 1) * 60_000;
}

/** `paused` is the job's own pause, or its supplier's, showing through a job that would otherwise run. */
function shownState(row: repo.JobRow): JobState {
  if ((row.paused || row.supplier_status === 'paused') && isActive(row.state)) return 'paused';
  if (row.state === 'scheduled' && row.not_before && row.not_before.getTime() <= Date.now()) return 'queued';
  return row.state;
}

// ---- upload ----

/**
 * Reads the upload line by line and writes it in batches of UPLOAD_BATCH records, one transaction
 * each, so memory holds one batch and a cut-off upload keeps every complete line before the cut.
 */
export async function uploadRecords(deps: JobsDeps, caller: Caller, id: string, body: AsyncIterable<Buffer>): Promise<UploadReply> {
  const job = await requireJob(deps.db, caller, id);
  if (job.state !== 'open') throw notOpen(job);
  let received = 0;
  let total = job.total_lines;
  const started = await totals.uploadHashOf(deps.db, job.id);
  // The hash goes on from where the job's last batch left it; each line notes the state after it.
  const hash = started.state === null ? await ResumableSha256.create() : await ResumableSha256.restore(started.state);
  const upload: UploadProgress = { apiKeyId: caller.apiKeyId, linesBefore: started.total_lines };
  // One batch is written while the next is read, hashed and parsed (the database's work and this
  // process's overlap); batches are still written one after another, in the order of the lines.
  let batch: ParsedUploadLine[] = [];
  let writing: Promise<void> | undefined;
  const written = async () => {
    const inFlight = writing;
    writing = undefined;
    await inFlight;
  };
  const write = async (lines: ParsedUploadLine[]) => {
    const result = await writeBatch(deps, job.id, lines, upload);
    received += result.count;
    total = result.total;
    if (result.count < lines.length) {
      throw new AppError('migration_job_too_large',
        `A job holds at most ${deps.config.jobMaxRecords} records; the first ${result.total} are kept.`,
        { extra: { received, total_records: result.total } });
    }
  };
  const flush = async () => {
    try {
      await written();
    } catch (error) {
      // A batch that failed ends the upload: the lines read after it are never written, or they
      // would take its line numbers and the lines of the failed batch would be lost in the middle.
      batch = [];
      throw error;
    }
    if (batch.length === 0) return;
    writing = write(batch);
    // Awaited by the next flush; until then its failure must not count as unhandled.
    writing.catch(() => undefined);
    batch = [];
  };
  // Blank lines are bounded too (ndjson-lines.ts): no more than the records a job may hold.
  const limits = { maxLineBytes: deps.config.bodyLimitBytes, maxTotalBytes: deps.config.jobUploadLimitBytes, maxBlankLines: deps.config.jobMaxRecords };
  try {
    for await (const line of ndjsonLines(body, limits, (bytes) => hash.update(bytes))) {
      batch.push({ parsed: parseLine(line), hashAfter: hash.save() });
      if (batch.length >= UPLOAD_BATCH) await flush();
    }
    await flush();
    await written();
  } catch (error) {
    // The lines read before the failure are complete: keep them (unless a write failed, which ends
    // the upload), then report the failure with what the job holds.
    if (!(error instanceof AppError)) await flush().catch(() => undefined);
    await written().catch(() => undefined);
    const kept = { extra: { received, total_records: total } };
    if (error instanceof UploadLimitExceeded) {
      throw new AppError('payload_too_large', error.bound === 'bytes'
        ? `An upload is at most ${deps.config.jobUploadLimitBytes} bytes; the records before the limit are kept.`
        : `An upload holds at most ${deps.config.jobMaxRecords} blank lines (JOB_MAX_RECORDS); the records before them are kept.`, kept);
    }
    if (error instanceof UploadNotGzip) {
      throw new AppError('parse_error', 'The body is not valid gzip (not gzip, or cut short): '
        + `the ${received} records read before the fault are kept; the job holds ${total}.`, kept);
    }
    if (error instanceof UploadCutOff) {
      // No one reads this answer (the client has gone); it is what the request log records.
      throw new AppError('parse_error', 'The connection was closed before the end of the upload: '
        + `the ${received} complete records received before are kept; the job holds ${total}, send the lines after those.`, kept);
    }
    if (error instanceof AppError && error.code === 'migration_job_not_open') {
      // Started or cancelled by another request while this upload ran: the batches before stay.
      throw new AppError('migration_job_not_open', `${error.detail} It changed during this upload: `
        + `the ${received} records written before are kept; the job holds ${total}.`, kept);
    }
    if (error instanceof UploadStalled) {
      throw new AppError('request_timeout', `No data arrived for ${error.idleMs / 1000} s: the upload was cut off. `
        + `The ${received} records received before are kept; the job holds ${total}, send the lines after those.`,
      kept);
    }
    throw error;
  }
  return { received, total_records: total };
}

/** The job is past `open`: records were posted to it (`upload`) or it was started again (`start`). */
function notOpen(job: repo.JobRow, refused: 'upload' | 'start' = 'upload'): AppError {
  return new AppError('migration_job_not_open', `Migration job "${job.id}" is ${job.state}: `
    + (refused === 'upload' ? 'records can only be added while it is open.' : 'only an open job can be started (it starts once).'));
}

/** A line read from the upload and parsed, with the upload hash's state once it is hashed (newline included). */
interface ParsedUploadLine { parsed: ParsedLine; hashAfter: string }

/** What an upload's batches carry from one to the next: who uploads, and the job's lines after the last one. */
interface UploadProgress { apiKeyId: number; linesBefore: number }

async function writeBatch(deps: JobsDeps, jobId: string, lines: ParsedUploadLine[], upload: UploadProgress): Promise<{ count: number; total: number }> {
  return deps.db.transaction().execute(async (trx) => {
    const job = await repo.lockJob(trx, jobId);
    if (!job) throw jobNotFound(jobId);
    if (job.state !== 'open') throw notOpen(job);
    const room = Math.max(0, deps.config.jobMaxRecords - job.total_lines);
    const kept = lines.slice(0, room);
    const parsed = kept.map((line) => line.parsed);
    // Within the file, the earlier line wins: a later line naming the same account, or an electricity
    // supply point of an earlier line's account, fails here, before any worker runs either of them.
    const numbers = parsed.flatMap((p) => (p.ext !== null && p.errors.length === 0 ? [p.ext] : []));
    const taken = await repo.takenAccountNumbers(trx, jobId, [...new Set(numbers)]);
    const pointsTaken = await repo.takenSupplyPoints(trx, jobId, [...new Set(parsed.flatMap((p) => p.points.map((point) => point.identifier)))]);
    const newPoints: Array<{ identifier: string; line: number }> = [];
    const records: repo.NewRecord[] = parsed.map((p, index) => {
      const line = job.total_lines + index + 1;
      const failed = (step: RecordStep, errors: RecordError[]): repo.NewRecord =>
        ({ line, external_account_number: p.ext, record: p.record, outcome: 'failed', step, errors, final_at_upload: true });
      if (p.errors.length > 0) return failed('parse', p.errors);
      const firstLine = p.ext === null ? undefined : taken.get(p.ext);
      if (firstLine !== undefined) {
        return failed('account', [{ code: 'duplicate_in_file', attr: 'account.external_account_number',
          detail: `Account "${p.ext}" is already on line ${firstLine} of this job; a job holds each account once.` }]);
      }
      const clash = p.points.find((point) => pointsTaken.has(point.identifier));
      if (clash) {
        return failed('account', [{ code: 'supply_point_already_registered', attr: clash.attr,
          detail: `Supply point identifier "${clash.identifier}" is already on the account of line ${pointsTaken.get(clash.identifier)} of this job.` }]);
      }
      if (p.ext !== null) taken.set(p.ext, line);
      for (const point of p.points) {
        pointsTaken.set(point.identifier, line);
        newPoints.push({ identifier: point.identifier, line });
      }
      return { line, external_account_number: p.ext, record: p.record, outcome: 'pending', step: null, errors: [], final_at_upload: false };
    });
    await repo.appendRecords(trx, jobId, records);
    await repo.addSupplyPoints(trx, jobId, newPoints);
    const last = kept[kept.length - 1];
    if (last) {
      // Another upload of the job wrote between this one's batches: the lines are not one file.
      const overlapped = job.total_lines !== upload.linesBefore;
      await totals.addFileTotals(trx, jobId, { from: job.total_lines + 1, to: job.total_lines + records.length },
        { hashState: last.hashAfter, overlapped, apiKeyId: upload.apiKeyId });
    }
    upload.linesBefore = job.total_lines + records.length;
    const failed = records.flatMap((r) => (r.outcome === 'failed'
      ? [recordFailedEvent(job.supplier_id, jobId, { line: r.line, externalAccountNumber: r.external_account_number, step: r.step ?? 'parse', errors: r.errors })]
      : []));
    await deps.events.record(trx, failed);
    return { count: records.length, total: job.total_lines + records.length };
  });
}

// ---- start, cancel, retry ----

export async function startJob(deps: JobsDeps, caller: Caller, id: string): Promise<Job> {
  const found = await requireJob(deps.db, caller, id);
  return deps.db.transaction().execute(async (trx) => {
    const job = (await repo.lockJob(trx, found.id))!;
    if (job.state !== 'open') throw notOpen(job, 'start');
    if (!(await repo.hasRecords(trx, job.id))) {
      throw new AppError('migration_job_empty', `Migration job "${job.id}" has no records: upload some before starting it.`);
    }
    const scheduled = job.not_before !== null && job.not_before.getTime() > deps.clock.nowMs();
    await repo.updateJob(trx, job.id, { state: scheduled ? 'scheduled' : 'queued', startedNow: true });
    await requestDispatch(deps.queue, trx, job, deps.clock.now());
    return getJob(trx, caller, id);
  });
}

export async function cancelJob(deps: JobsDeps, caller: Caller, id: string): Promise<Job> {
  const found = await requireJob(deps.db, caller, id);
  return deps.db.transaction().execute(async (trx) => {
    const job = (await repo.lockJob(trx, found.id))!;
    if (isFinished(job.state)) throw finishedAlready(job);
    await repo.cancelPending(trx, job.id, []);
    const { running } = await repo.hasUnfinished(trx, job.id);
    // Records already running finish; the last one to finish makes the job cancelled.
    await repo.updateJob(trx, job.id, { cancelRequested: true });
    if (!running) await endJob(deps.events, trx, job, 'cancelled');
    return getJob(trx, caller, id);
  });
}

export async function retryJob(deps: JobsDeps, caller: Caller, id: string): Promise<Job> {
  const found = await requireJob(deps.db, caller, id);
  return deps.db.transaction().execute(async (trx) => {
    const job = (await repo.lockJob(trx, found.id))!;
    if (!isFinished(job.state)) {
      throw new AppError('migration_job_not_finished', `Migration job "${job.id}" is ${shownState(job)}: only a completed or cancelled job can be retried.`);
    }
    // Its records would be cancelled again at once, as the window closed (not_after cannot be moved).
    if (job.not_after !== null && job.not_after.getTime() <= deps.clock.nowMs()) {
      throw new AppError('migration_job_window_closed', `Migration job "${job.id}" may run until ${utcSeconds(job.not_after)} (not_after), which has passed: `
        + 'a retry would cancel its records again. Run them in a new job.');
    }
    await repo.resetForRetry(trx, job.id);
    await repo.updateJob(trx, job.id, { state: 'queued', cancelRequested: false, clearFinished: true, startedNow: true });
    await requestDispatch(deps.queue, trx, { id: job.id, not_before: null, not_after: job.not_after }, deps.clock.now());
    return getJob(trx, caller, id);
  });
}

// ---- pause, resume, throttle ----

function finishedAlready(job: repo.JobRow): AppError {
  return new AppError('migration_job_finished', `Migration job "${job.id}" is already ${job.state}.`);
}

/**
 * No record of the job starts while it is paused; records in flight finish. Pausing a paused job
 * changes nothing. The dispatcher keeps looking, so resume needs nothing but the flag.
 */
export async function pauseJob(deps: JobsDeps, caller: Caller, id: string): Promise<Job> {
  const found = await requireJob(deps.db, caller, id);
  return deps.db.transaction().execute(async (trx) => {
    const job = (await repo.lockJob(trx, found.id))!;
    if (isFinished(job.state)) throw finishedAlready(job);
    await repo.updateJob(trx, job.id, { paused: true });
    return getJob(trx, caller, id);
  });
}

export async function resumeJob(deps: JobsDeps, caller: Caller, id: string): Promise<Job> {
  const found = await requireJob(deps.db, caller, id);
  return deps.db.transaction().execute(async (trx) => {
    const job = (await repo.lockJob(trx, found.id))!;
    if (isFinished(job.state)) throw finishedAlready(job);
    if (!job.paused) {
      const why = job.supplier_status === 'paused' ? `; its supplier "${job.supplier_code}" is paused, and the job goes on when it is ongoing again` : '';
      throw new AppError('migration_job_not_paused', `Migration job "${job.id}" was not paused${why}.`);
    }
    await repo.updateJob(trx, job.id, { paused: false });
    return getJob(trx, caller, id);
  });
}

/** The throttle may change at any time, even on a finished job (a retry runs under it). */
export async function updateJob(deps: JobsDeps, caller: Caller, id: string, body: UpdateJobBody): Promise<Job> {
  const job = await requireJob(deps.db, caller, id);
  await repo.setThrottle(deps.db, job.id, body.max_records_per_minute);
  return getJob(deps.db, caller, id);
}

// ---- results ----

export const RESULTS_PAGE = 1000;

export function resultOf(row: repo.RecordRow, dryRun: boolean): RecordResult {
  return {
    line: row.line,
    external_account_number: row.external_account_number,
    outcome: row.outcome,
    step: row.outcome === 'failed' ? row.step : null,
    created: row.created,
    service_account_number: row.service_account_number,
    dry_run: dryRun,
    errors: row.errors,
    warnings: row.warnings,
    finished_at: row.finished_at ? utcSeconds(row.finished_at) : null,
  };
}

/** The job's results in line order, read page by page (keyset on the line): NDJSON or CSV text chunks. */
export async function streamResults(
  db: Db, caller: Caller, id: string, outcome: RecordOutcome | undefined, format: 'ndjson' | 'csv',
): Promise<AsyncIterable<string>> {
  const job = await requireJob(db, caller, id);
  return (async function* () {
    if (format === 'csv') yield `${CSV_COLUMNS.join(',')}\r\n`;
    let after = 0;
    for (;;) {
      const rows = await repo.recordsPage(db, job.id, after, RESULTS_PAGE, outcome);
      if (rows.length === 0) return;
      const out: string[] = [];
      for (const row of rows) {
        const result = resultOf(row, job.dry_run);
        out.push(format === 'csv' ? csvRow(result) : `${JSON.stringify(result)}\n`);
      }
      yield out.join('');
      after = rows[rows.length - 1]!.line;
      if (rows.length < RESULTS_PAGE) return;
    }
  })();
}

function csvRow(r: RecordResult): string {
  const first = r.errors[0];
  const cells = [r.line, r.external_account_number, r.outcome, r.step, r.service_account_number,
    first?.code, first?.attr, first?.detail, r.errors.length, r.warnings.length, r.warnings[0]?.code];
  return `${cells.map(csvCell).join(',')}\r\n`;
}
