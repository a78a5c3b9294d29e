import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, Supplier } from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';
import type { JobCounts, OnDrift, RecordError, RecordOutcome, RecordStep, RecordWarning } from './migration-jobs.schemas.ts';
import { SQL_ACTIVE_JOB_STATES, SQL_FINISHED_JOB_STATES, SQL_WAITING_JOB_STATES, type StoredJobState } from './job-states.ts';

// Migration jobs and their records (migrations/005_migration_jobs.sql). Records are one row per
// uploaded line. A job's counts by outcome are counter rows that triggers move as records are written
// (migration 026); once it ends, its view reads the figures kept on its row (migration 025).
type Db = Kysely<Database> | Transaction<Database>;

export interface JobRow {
  id: string;
  supplier_id: number;
  supplier_code: string;
  supplier_status: string;
  organisation_id: number;
  operations_team_id: number;
  operations_team_name: string;
  dry_run: boolean;
  on_drift: OnDrift;
  state: StoredJobState;
  cancel_requested: boolean;
  not_before: Date | null;
  not_after: Date | null;
  total_lines: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  /** Paused by its own control (pause/), not by its supplier. */
  paused: boolean;
  max_records_per_minute: number | null;
  /** Kept when the job ended (endJob), cleared by a retry; null while it runs, or if it ended before they were kept. */
  final_figures: JobFigures | null;
}

/** What a job's view shows of its records (jobFigures), kept on its row when it ends. */
export interface JobFigures {
  counts: JobCounts;
  errors_by_code: Array<{ code: string; count: number }>;
  records_with_warnings: number;
  /** Kept when the job ends: its rate then (job-end.ts recentRate). */
  records_per_minute?: number;
}

const JOB_COLUMNS = sql`j.id::text AS id, j.supplier_id, s.code AS supplier_code, s.status AS supplier_status,
  s.organisation_id, j.operations_team_id, t.name AS operations_team_name, j.dry_run, j.on_drift, j.state, j.cancel_requested,
  j.not_before, j.not_after, j.total_lines, j.created_at, j.started_at, j.finished_at, j.paused, j.max_records_per_minute,
  j.final_figures`;
const JOB_FROM = sql`migration_jobs j JOIN import_suppliers s ON s.id = j.supplier_id JOIN operations_teams t ON t.id = j.operations_team_id`;

export async function insertJob(db: Db, job: {
  id: string; supplierId: number; teamId: number; dryRun: boolean; onDrift: OnDrift; notBefore: string | null; notAfter: string | null;
  maxRecordsPerMinute: number | null;
  controlTotals: Record<string, number | string>;
}): Promise<void> {
  await sql`INSERT INTO migration_jobs (id, supplier_id, operations_team_id, dry_run, on_drift, not_before, not_after, max_records_per_minute, control_totals)
    VALUES (${job.id}::uuid, ${job.supplierId}, ${job.teamId}, ${job.dryRun}, ${job.onDrift}, ${job.notBefore}::timestamptz, ${job.notAfter}::timestamptz,
      ${job.maxRecordsPerMinute}::integer, ${JSON.stringify(job.controlTotals)}::jsonb)`.execute(db);
}

/** The job if it belongs to the organisation (another organisation's job is an unknown one). */
export async function findJob(db: Db, id: string, organisationId?: number): Promise<JobRow | undefined> {
  const { rows } = await sql<JobRow>`SELECT ${JOB_COLUMNS} FROM ${JOB_FROM}
    WHERE j.id = ${id}::uuid ${organisationId === undefined ? sql`` : sql`AND s.organisation_id = ${organisationId}`}`.execute(db);
  return rows[0];
}

/**
 * Takes the job row's lock for the rest of the transaction: FOR NO KEY UPDATE, as an UPDATE of the row
 * takes, never FOR UPDATE. Every write of the job's records and counter rows checks the job row as a
 * foreign key (a KEY SHARE lock, held to its commit), which FOR UPDATE waits on: a control waited on a
 * worker that waited on the control's records, a deadlock. The job's id never changes.
 */
export async function lockJob(trx: Transaction<Database>, id: string): Promise<JobRow | undefined> {
  const { rows } = await sql<JobRow>`SELECT ${JOB_COLUMNS} FROM ${JOB_FROM} WHERE j.id = ${id}::uuid FOR NO KEY UPDATE OF j`.execute(trx);
  return rows[0];
}

export async function listJobs(db: Db, supplierId: number, limit: number, after?: { createdAt: string; id: string }): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`SELECT ${JOB_COLUMNS} FROM ${JOB_FROM}
    WHERE j.supplier_id = ${supplierId}
    ${after ? sql`AND (j.created_at, j.id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``}
    ORDER BY j.created_at DESC, j.id DESC LIMIT ${limit}`.execute(db);
  return rows;
}

/** The supplier's jobs not completed or cancelled, newest first. */
export async function unfinishedJobs(db: Db, supplierId: number): Promise<JobRow[]> {
  const { rows } = await sql<JobRow>`SELECT ${JOB_COLUMNS} FROM ${JOB_FROM}
    WHERE j.supplier_id = ${supplierId} AND j.state NOT IN (${SQL_FINISHED_JOB_STATES})
    ORDER BY j.created_at DESC, j.id DESC`.execute(db);
  return rows;
}

export async function updateJob(db: Db, id: string, changes: {
  state?: StoredJobState; cancelRequested?: boolean; startedNow?: boolean; clearFinished?: boolean; paused?: boolean;
}): Promise<void> {
  await sql`UPDATE migration_jobs SET
      state = COALESCE(${changes.state ?? null}::text, state),
      cancel_requested = COALESCE(${changes.cancelRequested ?? null}::boolean, cancel_requested),
      paused = COALESCE(${changes.paused ?? null}::boolean, paused),
      started_at = CASE WHEN ${changes.startedNow === true} THEN COALESCE(started_at, now()) ELSE started_at END,
      finished_at = CASE WHEN ${changes.clearFinished === true} THEN NULL ELSE finished_at END,
      final_figures = CASE WHEN ${changes.clearFinished === true} THEN NULL ELSE final_figures END
    WHERE id = ${id}::uuid`.execute(db);
}

/** The job ends (completed or cancelled) with the figures its records give now. A job that ends is no longer paused: a retry runs it. */
export async function markEnded(trx: Transaction<Database>, id: string, state: 'completed' | 'cancelled', figures: JobFigures): Promise<void> {
  await sql`UPDATE migration_jobs SET state = ${state}, paused = false, finished_at = now(), final_figures = ${JSON.stringify(figures)}::jsonb
    WHERE id = ${id}::uuid`.execute(trx);
}

/** A new throttle (or none) starts with a fresh bucket. */
export async function setThrottle(db: Db, id: string, maxRecordsPerMinute: number | null): Promise<void> {
  await sql`UPDATE migration_jobs SET max_records_per_minute = ${maxRecordsPerMinute}::integer, throttle_tokens = NULL, throttle_at = NULL
    WHERE id = ${id}::uuid`.execute(db);
}

/** What the dispatcher may send now: nothing while paused; with a throttle, what its bucket holds. */
export interface DispatchAllowance { paused: boolean; records: number; nextTokenMs: number | null }

/**
 * The job's throttle as a token bucket on its row, under the row's lock, so the dispatchers of every
 * instance draw on one bucket: it fills at max_records_per_minute / 60 records a second, up to two
 * seconds' worth (at least one record), so the records start evenly rather than in a burst each
 * minute. Takes up to `room` records from it. The store's clock, never an instance's.
 */
export async function takeDispatchAllowance(trx: Transaction<Database>, jobId: string, room: number): Promise<DispatchAllowance> {
  const { rows } = await sql<{ paused: boolean; rate: number | null; tokens: number | null }>`
    SELECT paused, max_records_per_minute AS rate,
      LEAST(GREATEST(1, max_records_per_minute / 30.0), COALESCE(throttle_tokens
        + max_records_per_minute / 60.0 * GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - throttle_at)), 1))::float8 AS tokens
    FROM migration_jobs WHERE id = ${jobId}::uuid FOR NO KEY UPDATE`.execute(trx);
  const row = rows[0];
  if (!row) return { paused: false, records: 0, nextTokenMs: null };
  if (row.rate === null || row.tokens === null) return { paused: row.paused, records: row.paused ? 0 : room, nextTokenMs: null };
  const records = row.paused ? 0 : Math.max(0, Math.min(room, Math.floor(row.tokens)));
  const left = row.tokens - records;
  await sql`UPDATE migration_jobs SET throttle_tokens = ${left}, throttle_at = clock_timestamp() WHERE id = ${jobId}::uuid`.execute(trx);
  return { paused: row.paused, records, nextTokenMs: left >= 1 ? 0 : Math.ceil(((1 - left) * 60_000) / row.rate) };
}

/** The first record a worker claims moves a queued or scheduled job to running. */
export async function markRunning(db: Db, id: string): Promise<void> {
  await sql`UPDATE migration_jobs SET state = 'running' WHERE id = ${id}::uuid AND state IN (${SQL_WAITING_JOB_STATES})`.execute(db);
}

/** The job's records by outcome: the sum of its counter rows (kept by triggers as records are written). */
export async function countsOf(db: Db, jobId: string): Promise<JobCounts> {
  const { rows: [sums] } = await sql<Omit<JobCounts, 'total'>>`SELECT
      coalesce(sum(pending), 0)::int AS pending, coalesce(sum(running), 0)::int AS running,
      coalesce(sum(succeeded), 0)::int AS succeeded, coalesce(sum(skipped), 0)::int AS skipped,
      coalesce(sum(failed), 0)::int AS failed, coalesce(sum(cancelled), 0)::int AS cancelled
    FROM migration_job_record_counts WHERE job_id = ${jobId}::uuid`.execute(db);
  const c = sums!; // an aggregate without GROUP BY: always one row
  return { total: c.pending + c.running + c.succeeded + c.skipped + c.failed + c.cancelled, ...c };
}

/** Records with warnings (the partial index of migration 020 holds just those). */
export async function countWithWarnings(db: Db, jobId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND warnings <> '[]'::jsonb`.execute(db);
  return rows[0]?.n ?? 0;
}

export async function errorsByCode(db: Db, jobId: string): Promise<Array<{ code: string; count: number }>> {
  const { rows } = await sql<{ code: string; count: number }>`
    SELECT errors->0->>'code' AS code, count(*)::int AS count FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND outcome = 'failed' AND jsonb_array_length(errors) > 0
    GROUP BY 1 ORDER BY 2 DESC, 1`.execute(db);
  return rows;
}

/** Records finished in the last `minutes` minutes. */
export async function finishedSince(db: Db, jobId: string, minutes: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND finished_at IS NOT NULL AND finished_at > now() - make_interval(mins => ${minutes})
      AND NOT final_at_upload AND outcome <> 'cancelled'`.execute(db);
  return rows[0]?.n ?? 0;
}

export interface NewRecord {
  line: number;
  external_account_number: string | null;
  record: unknown;
  outcome: 'pending' | 'failed';
  step: RecordStep | null;
  errors: RecordError[];
  final_at_upload: boolean;
}

/** Of these external account numbers, the ones a record of the job already has, with that record's line. */
export async function takenAccountNumbers(trx: Transaction<Database>, jobId: string, numbers: string[]): Promise<Map<string, number>> {
  if (numbers.length === 0) return new Map();
  const { rows } = await sql<{ n: string; line: number }>`SELECT external_account_number AS n, line FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND NOT final_at_upload AND external_account_number = ANY(${numbers}::text[])`.execute(trx);
  return new Map(rows.map((r) => [r.n, r.line]));
}

/** Of these electricity identifiers, the ones an earlier record of the job names, with that record's line. */
export async function takenSupplyPoints(trx: Transaction<Database>, jobId: string, identifiers: string[]): Promise<Map<string, number>> {
  if (identifiers.length === 0) return new Map();
  const { rows } = await sql<{ identifier: string; line: number }>`SELECT identifier, line FROM migration_job_supply_points
    WHERE job_id = ${jobId}::uuid AND identifier = ANY(${identifiers}::text[])`.execute(trx);
  return new Map(rows.map((r) => [r.identifier, r.line]));
}

/** The electricity identifiers of the records accepted at upload, each with the first line that names it. */
export async function addSupplyPoints(trx: Transaction<Database>, jobId: string, points: Array<{ identifier: string; line: number }>): Promise<void> {
  if (points.length === 0) return;
  await sql`INSERT INTO migration_job_supply_points (job_id, identifier, line)
    SELECT ${jobId}::uuid, p.identifier, p.line FROM jsonb_to_recordset(${JSON.stringify(points)}::jsonb) AS p(identifier text, line int)`.execute(trx);
}

/** One multi-row insert (the batch travels as one jsonb parameter), and the job's line counter. */
export async function appendRecords(trx: Transaction<Database>, jobId: string, records: NewRecord[]): Promise<void> {
  if (records.length === 0) return;
  // Each line's measures (migration 019's one definition) are kept on its record, for reconciliation.
  await sql`INSERT INTO migration_job_records (job_id, line, external_account_number, record, outcome, step, errors, final_at_upload, finished_at,
      file_customers, file_supply_points, file_meters, file_statements, file_transactions, file_notes, file_payment_instructions,
      file_balance_total, file_statements_gross_total)
    SELECT ${jobId}::uuid, r.line, r.external_account_number, r.record, r.outcome, r.step, r.errors, r.final_at_upload,
      CASE WHEN r.outcome = 'failed' THEN now() END,
      m.customers, m.supply_points, m.meters, m.statements, m.transactions, m.notes, m.payment_instructions, m.balance_total, m.statements_gross_total
    FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb)
      AS r(line int, external_account_number text, record jsonb, outcome text, step text, errors jsonb, final_at_upload boolean)
    CROSS JOIN LATERAL migration_record_file_measures(r.record) AS m`.execute(trx);
  await sql`UPDATE migration_jobs SET total_lines = total_lines + ${records.length} WHERE id = ${jobId}::uuid`.execute(trx);
}

/** Records of the job on the queue and not finished, counted up to `cap`. */
export async function countInFlight(trx: Transaction<Database>, jobId: string, cap: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM (SELECT 1 FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND enqueued AND outcome IN ('pending', 'running') LIMIT ${cap}) AS r`.execute(trx);
  return rows[0]?.n ?? 0;
}

/** The organisation the job's records are run for (their share of the workers). */
export async function organisationOf(trx: Transaction<Database>, jobId: string): Promise<number> {
  const { rows } = await sql<{ organisation_id: number }>`SELECT s.organisation_id FROM migration_jobs j
    JOIN import_suppliers s ON s.id = j.supplier_id WHERE j.id = ${jobId}::uuid`.execute(trx);
  if (!rows[0]) throw new Error(`migration job ${jobId} has no supplier`);
  return rows[0].organisation_id;
}

export async function hasUnsent(trx: Transaction<Database>, jobId: string): Promise<boolean> {
  const { rows } = await sql`SELECT 1 FROM migration_job_records WHERE job_id = ${jobId}::uuid AND outcome = 'pending' AND NOT enqueued LIMIT 1`.execute(trx);
  return rows.length > 0;
}

/**
 * The next records to put on the queue, marked as sent in the same transaction. The lines are picked
 * once, in a materialised CTE: as `line IN (subquery)` the planner may rescan the subquery for each
 * row it updates, and each rescan skips the rows this statement already updated (FOR UPDATE ignores
 * them) and picks the next ones, so the LIMIT no longer bounds the update (seen on PGlite once the
 * table grew a column: every pending record was sent at once).
 */
export async function takeUnsent(trx: Transaction<Database>, jobId: string, limit: number): Promise<number[]> {
  const { rows } = await sql<{ line: number }>`WITH picked AS MATERIALIZED (
      SELECT line FROM migration_job_records WHERE job_id = ${jobId}::uuid AND outcome = 'pending' AND NOT enqueued
      ORDER BY line LIMIT ${limit} FOR UPDATE SKIP LOCKED
    )
    UPDATE migration_job_records SET enqueued = true
    WHERE job_id = ${jobId}::uuid AND line IN (SELECT line FROM picked)
    RETURNING line`.execute(trx);
  return rows.map((r) => r.line).sort((a, b) => a - b);
}

export interface RecordRow {
  job_id: string;
  line: number;
  external_account_number: string | null;
  record: unknown;
  outcome: RecordOutcome;
  step: RecordStep | null;
  created: boolean | null;
  service_account_number: string | null;
  errors: RecordError[];
  warnings: RecordWarning[];
  attempts: number;
  finished_at: Date | null;
}

export const RECORD_COLUMNS = sql`job_id::text AS job_id, line, external_account_number, outcome, step, created, service_account_number, errors,
  warnings, attempts, finished_at`;

/**
 * Claims a record for a worker: pending, or running (its previous worker died and the queue gave
 * the record's job again). Returns undefined when the record is finished or cancelled.
 */
export async function claimRecord(db: Db, jobId: string, line: number): Promise<RecordRow | undefined> {
  const { rows } = await sql<RecordRow>`UPDATE migration_job_records SET outcome = 'running', attempts = attempts + 1
    WHERE job_id = ${jobId}::uuid AND line = ${line} AND outcome IN ('pending', 'running')
    RETURNING ${RECORD_COLUMNS}, record`.execute(db);
  return rows[0];
}

/** A job as a worker reads it with a record: with its whole supplier row, for the record's steps. */
export interface WorkerJobRow extends JobRow { supplier: Supplier }

/**
 * A worker's one statement per record job: the job (with its supplier) and, when the job is under way
 * and neither it nor its supplier is paused, the records of `lines` claimed as claimRecord does, in
 * line order. `records` is empty when nothing was claimed (the job ended, was never started, is
 * paused, or the records are finished). The lines are one array (`= ANY(ARRAY(…))`), so the records
 * are found by the primary key whatever the planner knows: as `line IN (subquery)`, a table never
 * analysed (PGlite has no autovacuum) was read through the outcome index, every pending record of
 * the job for each claim (115 ms a chunk at 90,000 pending against 1.4 ms; bench/findings.md).
 */
export async function claimRecordsWithJob(db: Db, jobId: string, lines: readonly number[]): Promise<{ job?: WorkerJobRow; records: RecordRow[] }> {
  const { rows } = await sql<JobRow & {
    supplier_customer_emails: boolean; supplier_documents_root: string; supplier_created_at: Date;
    r_line: number | null; r_external_account_number: string | null; r_record: unknown; r_outcome: RecordOutcome;
    r_step: RecordStep | null; r_created: boolean | null; r_service_account_number: string | null; r_errors: RecordError[];
    r_warnings: RecordWarning[]; r_attempts: number; r_finished_at: Date | null;
  }>`${sql.raw(SERVER_PREPARED)} WITH job AS (
      SELECT ${JOB_COLUMNS}, s.customer_emails AS supplier_customer_emails, s.documents_root AS supplier_documents_root,
        s.created_at AS supplier_created_at
      FROM ${JOB_FROM} WHERE j.id = ${jobId}::uuid
    ), claimed AS (
      UPDATE migration_job_records r SET outcome = 'running', attempts = r.attempts + 1
      FROM job
      WHERE r.job_id = ${jobId}::uuid AND r.line = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(lines)}::jsonb)::int))
        AND r.outcome IN ('pending', 'running') AND job.state IN (${SQL_ACTIVE_JOB_STATES}) AND job.supplier_status <> 'paused' AND NOT job.paused
      RETURNING r.line, r.external_account_number, r.record, r.outcome, r.step, r.created, r.service_account_number,
        r.errors, r.warnings, r.attempts, r.finished_at
    )
    SELECT job.*, c.line AS r_line, c.external_account_number AS r_external_account_number, c.record AS r_record,
      c.outcome AS r_outcome, c.step AS r_step, c.created AS r_created, c.service_account_number AS r_service_account_number,
      c.errors AS r_errors, c.warnings AS r_warnings, c.attempts AS r_attempts, c.finished_at AS r_finished_at
    FROM job LEFT JOIN claimed c ON true ORDER BY c.line`.execute(db);
  const row = rows[0];
  if (!row) return { records: [] };
  const {
    supplier_customer_emails, supplier_documents_root, supplier_created_at, r_line, r_external_account_number, r_record,
    r_outcome, r_step, r_created, r_service_account_number, r_errors, r_warnings, r_attempts, r_finished_at, ...job
  } = row;
  const supplier: Supplier = {
    id: job.supplier_id, code: job.supplier_code, organisation_id: job.organisation_id, status: job.supplier_status as Supplier['status'],
    customer_emails: supplier_customer_emails, documents_root: supplier_documents_root, created_at: supplier_created_at,
  };
  return {
    job: { ...job, supplier },
    records: rows.flatMap((r) => (r.r_line === null ? [] : [{
      job_id: jobId, line: r.r_line, external_account_number: r.r_external_account_number, record: r.r_record, outcome: r.r_outcome,
      step: r.r_step, created: r.r_created, service_account_number: r.r_service_account_number, errors: r.r_errors,
      warnings: r.r_warnings, attempts: r.r_attempts, finished_at: r.r_finished_at,
    }])),
  };
}

/**
 * Gives a running record its outcome, and answers in the same statement whether, as far as that
 * statement saw, another record of the job is still pending. A statement sees the others as they were
 * when it began: records finishing beside it, or pending ones cancelled meanwhile, are not seen. So
 * `false` must be looked at again after this commits (finishIfDone), and `true` can be stale: the
 * dispatcher's last looks end such a job (migration-jobs.worker.ts). Not EXISTS: PostgreSQL drops an
 * EXISTS subquery's ORDER BY, and the kept plan then scans a big job's records for the first pending
 * one (prepared-plans.test.ts); in line order the outcome index serves it. `finished` says whether
 * this statement gave the outcome (the record was running), so a failure is reported once.
 */
export async function finishRecord(db: Db, jobId: string, line: number, result: {
  outcome: 'succeeded' | 'skipped' | 'failed' | 'cancelled'; step: RecordStep | null; created: boolean | null;
  serviceAccountNumber: string | null; errors: RecordError[]; warnings?: RecordWarning[];
}): Promise<{ othersPending: boolean; finished: boolean }> {
  const { rows } = await sql<{ others_pending: boolean; finished: boolean }>`${sql.raw(SERVER_PREPARED)} WITH finished AS (
      UPDATE migration_job_records SET outcome = ${result.outcome}, step = ${result.step}, created = ${result.created},
        service_account_number = ${result.serviceAccountNumber}, errors = ${JSON.stringify(result.errors)}::jsonb,
        warnings = ${JSON.stringify(result.warnings ?? [])}::jsonb, finished_at = now()
      WHERE job_id = ${jobId}::uuid AND line = ${line} AND outcome = 'running'
      RETURNING line
    )
    SELECT COALESCE((SELECT true FROM migration_job_records WHERE job_id = ${jobId}::uuid AND outcome = 'pending' ORDER BY line LIMIT 1), false)
      AS others_pending, EXISTS (SELECT 1 FROM finished) AS finished`.execute(db);
  return { othersPending: rows[0]?.others_pending ?? false, finished: rows[0]?.finished ?? false };
}

/**
 * Records of a set, succeeded in one statement: with the account each created (in the transaction
 * that wrote them all, so the outcome commits with the account), or, in a pre-flight, with none.
 */
export async function finishSucceeded(db: Db, jobId: string, records: Array<{ line: number; serviceAccountNumber: string | null }>): Promise<void> {
  if (records.length === 0) return;
  await sql`UPDATE migration_job_records r SET outcome = 'succeeded', step = NULL, created = x.n IS NOT NULL, service_account_number = x.n,
      errors = '[]', warnings = '[]', finished_at = now()
    FROM jsonb_to_recordset(${JSON.stringify(records.map((r) => ({ l: r.line, n: r.serviceAccountNumber })))}::jsonb) AS x(l int, n text)
    WHERE r.job_id = ${jobId}::uuid AND r.line = x.l AND r.outcome = 'running'`.execute(db);
}

/**
 * The record created its account: written in the creating transaction, so a record run again after a
 * crash (its outcome never written) still knows that this job made the account.
 */
export async function markRecordCreated(db: Db, jobId: string, line: number, serviceAccountNumber: string): Promise<void> {
  await sql`${sql.raw(SERVER_PREPARED)} UPDATE migration_job_records SET created = true, service_account_number = ${serviceAccountNumber}
    WHERE job_id = ${jobId}::uuid AND line = ${line}`.execute(db);
}

/**
 * Records of a chunk that the set could not write, pending again as they were before the chunk's
 * claim (its try not counted), in the transaction that queues each as a record job of its own.
 */
export async function handBack(trx: Transaction<Database>, jobId: string, lines: number[]): Promise<void> {
  await sql`UPDATE migration_job_records SET outcome = 'pending', attempts = greatest(attempts - 1, 0)
    WHERE job_id = ${jobId}::uuid AND line = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(lines)}::jsonb)::int)) AND outcome = 'running'`.execute(trx);
}

/** A record waiting for its retry (a transient failure) is pending again meanwhile. */
export async function releaseRecord(db: Db, jobId: string, line: number, progress: { created: boolean | null; serviceAccountNumber: string | null }): Promise<void> {
  await sql`UPDATE migration_job_records SET outcome = 'pending', created = COALESCE(created, ${progress.created}),
      service_account_number = COALESCE(service_account_number, ${progress.serviceAccountNumber})
    WHERE job_id = ${jobId}::uuid AND line = ${line} AND outcome = 'running'`.execute(db);
}

/**
 * A paused job's records `lines` that a stopped worker left running (their queue job expired and came
 * back while the job is paused): pending again, as records waiting for their turn are; after a cancel,
 * cancelled, as cancel did to the pending ones. Nothing of a paused job is then held in flight, and a
 * cancelled one can end.
 */
export async function settleStranded(db: Db, jobId: string, lines: readonly number[], cancelled: boolean): Promise<void> {
  await sql`UPDATE migration_job_records SET ${cancelled ? sql`outcome = 'cancelled', errors = '[]', finished_at = now()` : sql`outcome = 'pending'`}
    WHERE job_id = ${jobId}::uuid AND line = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(lines)}::jsonb)::int)) AND outcome = 'running'`.execute(db);
}

/** Records that have not started: cancelled (by cancel, or with an error when the window closed). */
export async function cancelPending(db: Db, jobId: string, errors: RecordError[]): Promise<number> {
  const result = await sql`UPDATE migration_job_records SET outcome = 'cancelled', errors = ${JSON.stringify(errors)}::jsonb, finished_at = now()
    WHERE job_id = ${jobId}::uuid AND outcome = 'pending'`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Whether any record of the job is pending, or running: its counter rows (countsOf), a few rows
 * whatever the job's size. Looking in the records instead walked the outcome index from the job's
 * first line, past the entries its finished records had left behind, after every chunk.
 */
export async function hasUnfinished(db: Db, jobId: string): Promise<{ pending: boolean; running: boolean }> {
  const counts = await countsOf(db, jobId);
  return { pending: counts.pending > 0, running: counts.running > 0 };
}

/** retry: failed and cancelled records (not those judged at upload) are pending again. */
export async function resetForRetry(db: Db, jobId: string): Promise<number> {
  const result = await sql`UPDATE migration_job_records SET outcome = 'pending', step = NULL, errors = '[]', warnings = '[]', finished_at = NULL,
      enqueued = false
    WHERE job_id = ${jobId}::uuid AND outcome IN ('failed', 'cancelled') AND NOT final_at_upload`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

export async function hasRecords(db: Db, jobId: string): Promise<boolean> {
  const { rows } = await sql`SELECT 1 FROM migration_job_records WHERE job_id = ${jobId}::uuid LIMIT 1`.execute(db);
  return rows.length > 0;
}

/** One keyset page of results in line order. */
export async function recordsPage(db: Db, jobId: string, afterLine: number, limit: number, outcome?: RecordOutcome): Promise<RecordRow[]> {
  const { rows } = await sql<RecordRow>`SELECT ${RECORD_COLUMNS} FROM migration_job_records
    WHERE job_id = ${jobId}::uuid AND line > ${afterLine} ${outcome ? sql`AND outcome = ${outcome}` : sql``}
    ORDER BY line LIMIT ${limit}`.execute(db);
  return rows;
}
