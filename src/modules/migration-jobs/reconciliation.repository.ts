import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { COUNT_MEASURES, MONEY_MEASURES } from './migration-jobs.schemas.ts';

// Reconciliation (migrations/019_migration_job_totals.sql): the file totals a job's uploads keep, and
// what the store holds for the items its records carry, read by their own keys.
type Db = Kysely<Database> | Transaction<Database>;

/** Where the job's upload hash stands: its saved state (null before any line), and its line count. */
export async function uploadHashOf(db: Db, id: string): Promise<{ state: string | null; overlapped: boolean; total_lines: number }> {
  const { rows } = await sql<{ state: string | null; overlapped: boolean; total_lines: number }>`
    SELECT upload_sha256_state AS state, upload_sha256_overlapped AS overlapped, total_lines FROM migration_jobs WHERE id = ${id}::uuid`.execute(db);
  return rows[0] ?? { state: null, overlapped: false, total_lines: 0 };
}

/**
 * Adds the measures of the lines just appended (fromLine..toLine, each measured as it was inserted) to the job's file totals, and moves
 * its upload hash, in the batch's transaction: a batch that is not kept counts nowhere.
 */
export async function addFileTotals(trx: Transaction<Database>, jobId: string, lines: { from: number; to: number }, upload: {
  hashState: string; overlapped: boolean; apiKeyId: number;
}): Promise<void> {
  await sql`UPDATE migration_jobs AS j SET
      file_unparsable_lines = j.file_unparsable_lines + t.unparsable, file_accounts = j.file_accounts + t.accounts,
      file_customers = j.file_customers + t.customers, file_supply_points = j.file_supply_points + t.supply_points,
      file_meters = j.file_meters + t.meters, file_statements = j.file_statements + t.statements,
      file_transactions = j.file_transactions + t.transactions, file_notes = j.file_notes + t.notes,
      file_payment_instructions = j.file_payment_instructions + t.payment_instructions,
      file_balance_total = j.file_balance_total + t.balance_total,
      file_statements_gross_total = j.file_statements_gross_total + t.statements_gross_total,
      upload_sha256_state = ${upload.hashState}, upload_sha256_overlapped = j.upload_sha256_overlapped OR ${upload.overlapped},
      uploaded_by = COALESCE(j.uploaded_by, ${upload.apiKeyId})
    FROM (SELECT count(*) FILTER (WHERE r.record IS NULL) AS unparsable, count(*) AS accounts,
            COALESCE(sum(r.file_customers), 0) AS customers, COALESCE(sum(r.file_supply_points), 0) AS supply_points,
            COALESCE(sum(r.file_meters), 0) AS meters, COALESCE(sum(r.file_statements), 0) AS statements,
            COALESCE(sum(r.file_transactions), 0) AS transactions, COALESCE(sum(r.file_notes), 0) AS notes,
            COALESCE(sum(r.file_payment_instructions), 0) AS payment_instructions, COALESCE(sum(r.file_balance_total), 0) AS balance_total,
            COALESCE(sum(r.file_statements_gross_total), 0) AS statements_gross_total
          FROM migration_job_records AS r
          WHERE r.job_id = ${jobId}::uuid AND r.line BETWEEN ${lines.from} AND ${lines.to}) AS t
    WHERE j.id = ${jobId}::uuid`.execute(trx);
}

/** What the job's uploads counted, and who uploaded. Money as numeric text. */
export interface FileTotalsRow {
  control_totals: Record<string, number | string>;
  upload_sha256_state: string | null;
  upload_sha256_overlapped: boolean;
  uploaded_by: string | null;
  file_unparsable_lines: number;
  accounts: number; customers: number; supply_points: number; meters: number; statements: number;
  transactions: number; notes: number; payment_instructions: number; balance_total: string; statements_gross_total: string;
}

export async function fileTotalsOf(db: Db, jobId: string): Promise<FileTotalsRow> {
  const { rows } = await sql<FileTotalsRow>`SELECT j.control_totals, j.upload_sha256_state, j.upload_sha256_overlapped,
      k.prefix AS uploaded_by, j.file_unparsable_lines,
      j.file_accounts::int AS accounts, j.file_customers::int AS customers, j.file_supply_points::int AS supply_points,
      j.file_meters::int AS meters, j.file_statements::int AS statements, j.file_transactions::int AS transactions,
      j.file_notes::int AS notes, j.file_payment_instructions::int AS payment_instructions,
      j.file_balance_total::text AS balance_total, j.file_statements_gross_total::text AS statements_gross_total
    FROM migration_jobs AS j LEFT JOIN api_keys AS k ON k.id = j.uploaded_by WHERE j.id = ${jobId}::uuid`.execute(db);
  return rows[0]!;
}

type Measured = Omit<FileTotalsRow, 'control_totals' | 'upload_sha256_state' | 'upload_sha256_overlapped' | 'uploaded_by' | 'file_unparsable_lines'>;

/** One record: what its line holds (`file`), and what the store holds for its items (`migrated`). */
export interface RecordMeasuresRow {
  line: number;
  external_account_number: string | null;
  /** The store holds the record's account (false too when the line could not be read). */
  found: boolean;
  /** The record failed: the store refused (part of) what its line sent, whatever the measures show. */
  failed: boolean;
  /** The record ran on an account imported before with other data, kept as it was (its account_differs warnings). */
  drifted: boolean;
  /** The record was skipped: its account is marked to skip. */
  skipped: boolean;
  file: Measured;
  migrated: Measured;
}

const MEASURE_JSON = (p: string) => sql.raw(`jsonb_build_object(${[...COUNT_MEASURES, ...MONEY_MEASURES]
  .map((m) => `'${m}', ${p}${m}${(MONEY_MEASURES as readonly string[]).includes(m) ? '::text' : ''}`).join(', ')})`);

/**
 * The keys a record's items carry, as a JSON array read in one call: `items` must be an array, and
 * each of its objects that has `key` gives its value. A key matches a stored one when it is that text
 * as a JSON string (the `?` operator); an item without one matches nothing.
 */
const itemKeys = (items: string, key: string) =>
  sql.raw(`jsonb_path_query_array(r.record->'${items}', 'strict $[*] ? (exists(@.${key})).${key}', '{}', true)`);

/** A stored date as the line sends one (YYYY-MM-DD). */
const sentDate = (stored: string) => `to_char(${stored}, 'YYYY-MM-DD')`;
/**
 * A stored transaction holds what the line sent for it: the line's transactions hold one with its id,
 * type, amount (compared as numbers: 12.3 is 12.30) and date (the date sent, kept as original_date
 * when the transaction was moved into the open statement period). One containment test (`@>`) a row.
 */
const TRANSACTION_AS_SENT = sql.raw(`r.transactions @> jsonb_build_array(jsonb_build_object('transaction_id', x.transaction_id,
  'type', x.type, 'amount', x.amount, 'transaction_date', ${sentDate('COALESCE(x.original_date, x.transaction_date)')}))`);
/** A stored statement holds what the line sent for it: its number, gross amount and dates. */
const STATEMENT_AS_SENT = sql.raw(`r.statements @> jsonb_build_array(jsonb_build_object('statement_id', y.statement_id,
  'number', y.number, 'gross_amount', y.gross_amount, 'bill_period_from_date', ${sentDate('y.bill_period_from_date')},
  'bill_period_to_date', ${sentDate('y.bill_period_to_date')}, 'issued_date', ${sentDate('y.issued_date')}))`);

const MEASURE_NAMES = [...COUNT_MEASURES, ...MONEY_MEASURES] as const;
type MeasureName = (typeof MEASURE_NAMES)[number];
const isMoney = (m: MeasureName) => (MONEY_MEASURES as readonly string[]).includes(m);
/** A line's file side, from its record. */
const FILE_SIDE = sql.raw(MEASURE_NAMES.map((m) => `r.f_${m}`).join(', '));
/** The columns of a store-side part that are the record's (none: it is another row of the same line). */
const NO_RECORD = sql.raw(['NULL', 'NULL', 'NULL', 'NULL', 'NULL', ...MEASURE_NAMES.map(() => 'NULL')].join(', '));
/** A part's store side: the measures it gives, 0 for the others. */
const storeSide = (values: Partial<Record<MeasureName, string>>) =>
  sql.raw(MEASURE_NAMES.map((m) => `${values[m] ?? (isMoney(m) ? '0::numeric' : '0')} AS s_${m}`).join(', '));
/** A line's parts put together: its record's file side, and each store-side measure summed over its parts. */
const BY_LINE = sql.raw([...MEASURE_NAMES.map((m) => `max(f_${m}) AS f_${m}`),
  ...MEASURE_NAMES.map((m) => (isMoney(m) ? `sum(s_${m}) AS s_${m}` : `sum(s_${m})::int AS s_${m}`))].join(', '));

/**
 * The job's records (all, or the lines `from`..`to`) with both sides of each measure: `f_` what the
 * line holds (kept on the record at upload, migration 022), `s_` what the store holds, `found` whether the store holds its account. The store's
 * side is read by the items' own keys, never from the record's outcome: the account by the supplier
 * and its external account number; statements by statement_id and transactions by transaction_id
 * within it, each counted only when the store holds it as the line sent it (TRANSACTION_AS_SENT,
 * STATEMENT_AS_SENT: changes that cancel out in the sums still show; a stored item counts once,
 * however often the line names its key); notes by body, as a re-run recognises them; the balance the
 * account keeps (the account read's, which a trigger moves with every transaction: a balance changed
 * on its own shows too). An account belongs to one line of
 * the job: a line refused at upload while another line of the job runs the same account number (a
 * duplicate in the file) sees none of it, so the store's side counts that account once and the
 * refused line is an exception (not migrated) instead of a second count of the first line's account.
 *
 * Set-based, one pass per table: the records' item keys are read from their JSON once, as JSON
 * arrays on the record (`r`), and each table is joined to the records by account and key and grouped
 * by line. A line groups on its own. Each note sent is looked up by the notes' (account,
 * body) index: joined as a set, the planner guesses a hundred notes a record and reads the whole notes
 * table, even for one page of 500 lines.
 *
 * A line's figures are put together by grouping its parts (UNION ALL, GROUP BY line), never by joining
 * each table's figures to the records: without statistics (tables a server has not analysed yet, right
 * after a first big job or with autovacuum off) the planner took the records for one row and joined
 * every table's figures to them in nested loops, computing each again for every record: over a
 * minute, and the statement's time limit, for 3,000 records. Grouping costs the same whatever the
 * planner guesses.
 */
const measuredRecords = (jobId: string, supplierId: number, lines?: { from: number; to: number }) => sql`(
  WITH r AS MATERIALIZED (
    SELECT r.line, r.external_account_number, a.id AS account_id, r.outcome = 'failed' AS failed,
      r.warnings <> '[]'::jsonb AS drifted, r.outcome = 'skipped' AS skipped, 1 AS f_accounts, r.file_customers AS f_customers,
      r.file_supply_points AS f_supply_points, r.file_meters AS f_meters, r.file_statements AS f_statements,
      r.file_transactions AS f_transactions, r.file_notes AS f_notes, r.file_payment_instructions AS f_payment_instructions,
      r.file_balance_total AS f_balance_total, r.file_statements_gross_total AS f_statements_gross_total,
      CASE WHEN a.id IS NOT NULL THEN jsonb_typeof(r.record->'payment_instruction') = 'object' END AS sends_instruction,
      a.balance,
      CASE WHEN a.id IS NOT NULL THEN ${itemKeys('statements', 'statement_id')} END AS statement_keys,
      CASE WHEN a.id IS NOT NULL THEN ${itemKeys('transactions', 'transaction_id')} END AS transaction_keys,
      CASE WHEN a.id IS NOT NULL THEN r.record->'statements' END AS statements,
      CASE WHEN a.id IS NOT NULL THEN r.record->'transactions' END AS transactions,
      CASE WHEN a.id IS NOT NULL THEN r.record->'notes' END AS notes
    FROM migration_job_records AS r
    LEFT JOIN accounts AS a ON r.record IS NOT NULL AND a.supplier_id = ${supplierId} AND a.external_account_number = r.external_account_number
      AND NOT (r.final_at_upload AND EXISTS (SELECT 1 FROM migration_job_records AS o
        WHERE o.job_id = r.job_id AND o.external_account_number = r.external_account_number AND NOT o.final_at_upload))
    WHERE r.job_id = ${jobId}::uuid ${lines ? sql`AND r.line BETWEEN ${lines.from} AND ${lines.to}` : sql``}
  ),
  cu AS (SELECT r.line, count(*)::int AS n FROM r JOIN customers AS c ON c.account_id = r.account_id GROUP BY 1),
  sp AS (SELECT r.line, count(*)::int AS n FROM r JOIN supply_points AS p ON p.account_id = r.account_id GROUP BY 1),
  me AS (SELECT r.line, count(*)::int AS n FROM r JOIN supply_points AS p ON p.account_id = r.account_id
    JOIN meters AS m ON m.supply_point_id = p.id GROUP BY 1),
  tx AS (SELECT r.line, count(*) FILTER (WHERE ${TRANSACTION_AS_SENT})::int AS n
    FROM r JOIN transactions AS x ON x.account_id = r.account_id AND r.transaction_keys ? x.transaction_id GROUP BY 1),
  st AS (SELECT r.line, count(*) FILTER (WHERE ${STATEMENT_AS_SENT})::int AS n, sum(y.gross_amount) AS gross
    FROM r JOIN statements AS y ON y.account_id = r.account_id AND r.statement_keys ? y.statement_id GROUP BY 1),
  pi AS (SELECT r.line FROM r JOIN payment_instructions AS q ON q.account_id = r.account_id AND q.active WHERE r.sends_instruction),
  no AS (SELECT r.line, (SELECT count(*) FROM jsonb_items_of(r.notes) AS n(v) WHERE EXISTS (SELECT 1 FROM notes AS o
      WHERE o.account_id = r.account_id AND md5(COALESCE(o.body, '')) = md5(COALESCE(n.v->>'body', ''))))::int AS n
    FROM r WHERE r.account_id IS NOT NULL),
  parts AS (
    SELECT r.line, r.external_account_number, r.account_id IS NOT NULL AS found, r.failed, r.drifted, r.skipped, ${FILE_SIDE}, ${storeSide({ accounts: '(r.account_id IS NOT NULL)::int', balance_total: 'COALESCE(r.balance, 0)' })} FROM r
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ customers: 'n' })} FROM cu
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ supply_points: 'n' })} FROM sp
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ meters: 'n' })} FROM me
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ transactions: 'n' })} FROM tx
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ statements: 'n', statements_gross_total: 'gross' })} FROM st
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ payment_instructions: '1' })} FROM pi
    UNION ALL SELECT line, ${NO_RECORD}, ${storeSide({ notes: 'n' })} FROM no
  )
  SELECT line, max(external_account_number) AS external_account_number, bool_or(found) AS found, bool_or(failed) AS failed,
    bool_or(drifted) AS drifted, bool_or(skipped) AS skipped, ${BY_LINE}
  FROM parts GROUP BY line
) AS m`;

/** The job's records `from`..`to` (line numbers), in line order, with both sides of each measure. */
export async function recordMeasures(db: Db, jobId: string, supplierId: number, lines: { from: number; to: number }): Promise<RecordMeasuresRow[]> {
  const { rows } = await sql<RecordMeasuresRow>`SELECT m.line, m.external_account_number, m.found, m.failed, m.drifted, m.skipped,
      ${MEASURE_JSON('m.f_')} AS file, ${MEASURE_JSON('m.s_')} AS migrated
    FROM ${measuredRecords(jobId, supplierId, lines)} ORDER BY m.line`.execute(db);
  return rows;
}

/** The store's side of every measure summed, and the number of exception lines the records make. */
export type MigratedTotals = Measured & { exceptions: number };

/**
 * The store's side of every measure summed over the job's records (all, or the lines `from`..`to`),
 * and the number of exception lines they make (one for a record the store does not hold, else one per
 * measure that differs, and one more when the record failed or kept an account that differs), in one statement: the sums of money are numeric in SQL and reach JS as text,
 * so nothing passes a float.
 */
export async function migratedTotals(trx: Transaction<Database>, jobId: string, supplierId: number, lines?: { from: number; to: number }): Promise<MigratedTotals> {
  // The planner cannot know how many items a record's JSON arrays hold, guesses high, and on
  // PostgreSQL compiles the statement with JIT: over a second and a half of optimising for a
  // statement that runs in two. Off for this transaction only.
  await sql`SET LOCAL jit = off`.execute(trx);
  const sums = sql.raw([...COUNT_MEASURES.map((c) => `COALESCE(sum(m.s_${c}), 0)::int AS ${c}`),
    ...MONEY_MEASURES.map((c) => `COALESCE(sum(m.s_${c}), 0)::text AS ${c}`)].join(', '));
  const differing = sql.raw([...COUNT_MEASURES, ...MONEY_MEASURES].map((c) => `(m.f_${c} <> m.s_${c})::int`).join(' + '));
  const { rows } = await sql<MigratedTotals>`SELECT ${sums},
      COALESCE(sum(CASE WHEN m.found THEN ${differing} + m.failed::int + m.drifted::int ELSE 1 END), 0)::int AS exceptions
    FROM ${measuredRecords(jobId, supplierId, lines)}`.execute(trx);
  return rows[0]!;
}
