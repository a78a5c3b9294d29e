import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { heldLocks } from '../account-imports/index.ts';
import type { RecordOutcome } from '../migration-jobs/index.ts';
import { SQL_FINISHED_JOB_STATES } from '../migration-jobs/index.ts';

// The statistics queries (D14). None counts a supplier's accounts, so the answer costs the same at a
// million accounts as at ten: each reads counters that triggers of migration 009 keep in the writing
// transactions, spread over shard rows and summed here.
// - counts: account_import_counts, plus pg_locks for the creates running now;
// - created per hour: accounts_created_per_hour, the last 48 hours' rows;
// - error groups: account_error_group_counts, and examples from account_imports_failing_groups_idx
//   (partial: failing accounts only), whose columns are the latest attempt's (migrations 007, 009).
type Db = Kysely<Database>;

/** A staged account is failing when its latest create attempt failed (and it is neither imported nor skipped). */
const FAILING_E = "e.account_id IS NULL AND NOT e.skipped AND e.last_attempt_outcome = 'failed'";

export const COUNTED_STATES = ['staged', 'imported', 'skipped', 'failed'] as const;
export type CountsRow = Record<(typeof COUNTED_STATES)[number], number>;

/** The sums of account_import_counts' shard rows (alias c), one column per counted state. */
const COUNT_SUMS = sql.join(COUNTED_STATES.map((state) => sql`coalesce(sum(c.${sql.ref(state)}), 0)::int AS ${sql.ref(state)}`));

export async function stateCounts(db: Db, supplierId: number): Promise<CountsRow> {
  const { rows } = await sql<CountsRow>`SELECT ${COUNT_SUMS}
    FROM account_import_counts c WHERE c.supplier_id = ${supplierId}`.execute(db);
  return rows[0]!;
}

/** stateCounts of every supplier at once, by supplier code (/metrics). */
export async function stateCountsBySupplier(db: Db): Promise<Array<CountsRow & { code: string }>> {
  const { rows } = await sql<CountsRow & { code: string }>`SELECT s.code, ${COUNT_SUMS}
    FROM import_suppliers s LEFT JOIN account_import_counts c ON c.supplier_id = s.id GROUP BY s.code`.execute(db);
  return rows;
}

/**
 * Creates running now: the account locks held in pg_locks (import-locks.repository.ts), joined to
 * the supplier's pending rows by id. pg_locks holds a few hundred rows at most.
 */
export async function createsInProgress(db: Db, supplierId: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n
    FROM ${heldLocks('account')} AS l JOIN account_imports ai ON ai.id = l.objid::int8
    WHERE ai.supplier_id = ${supplierId} AND ai.account_id IS NULL`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The locks of one kind held now, in any instance: creates running (account) or concurrency slots in use (slot). */
export async function locksHeld(db: Db, kind: 'account' | 'slot'): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${heldLocks(kind)} AS l`.execute(db);
  return rows[0]?.n ?? 0;
}

/**
 * Accounts created in each of the last `hours` hours, oldest first, as (hours since the epoch, count).
 * Hours are counted on the epoch, so the buckets are UTC hours whatever the session's time zone; the
 * clock is the store's, the one that wrote accounts.created_at.
 */
export async function createdPerHour(db: Db, supplierId: number, hours: number): Promise<Array<{ h: number; n: number }>> {
  const { rows } = await sql<{ h: number; n: number }>`
    WITH now_hour AS (SELECT floor(extract(epoch FROM now()) / 3600)::bigint AS h)
    SELECT s.h::int AS h, coalesce((SELECT sum(c.created) FROM accounts_created_per_hour c
                                     WHERE c.supplier_id = ${supplierId} AND c.hour = s.h), 0)::int AS n
    FROM now_hour, generate_series(now_hour.h - ${hours - 1}::bigint, now_hour.h) AS s(h)
    ORDER BY s.h`.execute(db);
  return rows;
}

export interface ErrorGroupRow { code: string; attr: string; n: number; examples: string[] }

/**
 * The failing accounts grouped by the code and attr of their latest attempt's first error, largest
 * first, with the first examples of each: the group counters (a few rows a group), then one probe of
 * account_imports_failing_groups_idx per group shown.
 */
export async function errorGroups(db: Db, supplierId: number, maxGroups: number, maxExamples: number): Promise<ErrorGroupRow[]> {
  const { rows } = await sql<ErrorGroupRow>`
    SELECT g.code, g.attr, g.n, ARRAY(
        SELECT e.external_account_number FROM account_imports e
        WHERE e.supplier_id = ${supplierId} AND ${sql.raw(FAILING_E)}
          AND e.last_error_group_code = g.code AND e.last_error_attr = g.attr
        ORDER BY e.external_account_number LIMIT ${maxExamples}) AS examples
    FROM (SELECT code, attr, sum(failed)::int AS n FROM account_error_group_counts WHERE supplier_id = ${supplierId}
          GROUP BY code, attr HAVING sum(failed) > 0
          ORDER BY n DESC, code, attr LIMIT ${maxGroups}) g
    ORDER BY g.n DESC, g.code, g.attr`.execute(db);
  return rows;
}

/**
 * Job records that failed before their account was staged: refused at upload (final_at_upload: an
 * unreadable line, a repeat of an earlier line's account), or with no staged account of that number
 * (validation refused it). Read per job from the (job_id, outcome, line) index: failed records are
 * few beside the rest.
 */
export async function rejectedJobRecords(db: Db, supplierId: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n
    FROM migration_jobs AS j JOIN migration_job_records AS r ON r.job_id = j.id AND r.outcome = 'failed'
    WHERE j.supplier_id = ${supplierId} AND NOT j.dry_run AND (r.final_at_upload OR NOT EXISTS (SELECT 1 FROM account_imports AS a
      WHERE a.supplier_id = ${supplierId} AND a.external_account_number = r.external_account_number))`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The failing accounts of every supplier by the code of their latest attempt's first error (/metrics): the same group counters. */
export async function failingByCode(db: Db): Promise<Array<{ code: string; n: number }>> {
  const { rows } = await sql<{ code: string; n: number }>`SELECT code, sum(failed)::int AS n FROM account_error_group_counts
    GROUP BY code HAVING sum(failed) > 0`.execute(db);
  return rows;
}

/** The records of every job not finished, by outcome (/metrics): the jobs' record counters. */
export async function unfinishedJobRecords(db: Db): Promise<Array<{ outcome: RecordOutcome; n: number }>> {
  const { rows } = await sql<{ outcome: RecordOutcome; n: number }>`SELECT o.outcome, sum(o.n)::int AS n
    FROM migration_jobs j JOIN migration_job_record_counts c ON c.job_id = j.id
    CROSS JOIN LATERAL (VALUES ('pending', c.pending), ('running', c.running), ('succeeded', c.succeeded),
      ('skipped', c.skipped), ('failed', c.failed), ('cancelled', c.cancelled)) AS o (outcome, n)
    WHERE j.state NOT IN (${SQL_FINISHED_JOB_STATES}) GROUP BY o.outcome HAVING sum(o.n) <> 0`.execute(db);
  return rows;
}

export const DELIVERY_RESULTS = ['delivered', 'rejected', 'failed'] as const;

/** Webhook delivery attempts of the last hour by result: delivered (2xx), rejected (another status), failed (no answer). */
export async function deliveriesLastHour(db: Db): Promise<Array<{ result: (typeof DELIVERY_RESULTS)[number]; n: number }>> {
  const { rows } = await sql<{ result: (typeof DELIVERY_RESULTS)[number]; n: number }>`SELECT CASE WHEN status_code BETWEEN 200 AND 299 THEN 'delivered'
      WHEN status_code IS NOT NULL THEN 'rejected' ELSE 'failed' END AS result, count(*)::int AS n
    FROM webhook_deliveries WHERE at > now() - interval '1 hour' GROUP BY 1`.execute(db);
  return rows;
}

/** The organisation's suppliers (the dashboard's picker); import_suppliers holds a few per organisation. */
export async function organisationSuppliers(db: Db, organisationId: number): Promise<Array<{ code: string; status: 'ongoing' | 'paused' | 'complete' }>> {
  return db.selectFrom('import_suppliers').select(['code', 'status'])
    .where('organisation_id', '=', organisationId).orderBy('code').execute();
}

export interface AttemptRow {
  started_at: Date; finished_at: Date; dry_run: boolean; outcome: 'created' | 'dry_run_rolled_back' | 'failed';
  error_code: string | null; error_attr: string | null; error_detail: string | null;
}

/** An account's latest create attempts, newest first (create_attempts_account_idx); undefined when never staged. */
export async function accountAttempts(db: Db, supplierId: number, ext: string, limit: number): Promise<AttemptRow[] | undefined> {
  const staged = await db.selectFrom('account_imports').select('id')
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', ext).executeTakeFirst();
  if (!staged) return undefined;
  return db.selectFrom('create_attempts')
    .select(['started_at', 'finished_at', 'dry_run', 'outcome', 'error_code', 'error_attr', 'error_detail'])
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', ext)
    .orderBy('id', 'desc').limit(limit).execute();
}
