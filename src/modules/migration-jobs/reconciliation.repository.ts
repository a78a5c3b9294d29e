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
 * Adds the measures of the lines just appended (fromLine..toLine) to the job's file totals, and moves
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
    FROM (SELECT count(*) FILTER (WHERE r.record IS NULL) AS unparsable, COALESCE(sum(m.accounts), 0) AS accounts,
            COALESCE(sum(m.customers), 0) AS customers, COALESCE(sum(m.supply_points), 0) AS supply_points,
            COALESCE(sum(m.meters), 0) AS meters, COALESCE(sum(m.statements), 0) AS statements,
            COALESCE(sum(m.transactions), 0) AS transactions, COALESCE(sum(m.notes), 0) AS notes,
            COALESCE(sum(m.payment_instructions), 0) AS payment_instructions, COALESCE(sum(m.balance_total), 0) AS balance_total,
            COALESCE(sum(m.statements_gross_total), 0) AS statements_gross_total
          FROM migration_job_records AS r CROSS JOIN LATERAL migration_record_file_measures(r.record) AS m
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
  file: Measured;
  migrated: Measured;
}

const MEASURE_JSON = (p: string) => sql.raw(`jsonb_build_object('accounts', ${p}accounts, 'customers', ${p}customers,
  'supply_points', ${p}supply_points, 'meters', ${p}meters, 'statements', ${p}statements, 'transactions', ${p}transactions,
  'notes', ${p}notes, 'payment_instructions', ${p}payment_instructions, 'balance_total', ${p}balance_total::text,
  'statements_gross_total', ${p}statements_gross_total::text)`);

/**
 * Each of the job's records with both sides of each measure: `f.` what its line holds, `s.` what the
 * store holds, `a.id` its account. The store's side is read by the items' own keys, never from the
 * record's outcome: the account by the supplier and its external account number; statements by
 * statement_id and transactions by transaction_id within it; notes by body, as a re-run recognises
 * them; the balance from every transaction the account holds (the account read's balance, summed
 * again rather than taken from the kept column).
 */
const measuredRecords = (jobId: string, supplierId: number) => sql`migration_job_records AS r
    CROSS JOIN LATERAL migration_record_file_measures(r.record) AS f
    LEFT JOIN LATERAL (SELECT id FROM accounts WHERE r.record IS NOT NULL AND supplier_id = ${supplierId}
      AND external_account_number = r.external_account_number LIMIT 1) AS a ON true
    CROSS JOIN LATERAL (SELECT
        (a.id IS NOT NULL)::int AS accounts,
        (SELECT count(*)::int FROM customers AS c WHERE c.account_id = a.id) AS customers,
        (SELECT count(*)::int FROM supply_points AS p WHERE p.account_id = a.id) AS supply_points,
        (SELECT count(*)::int FROM meters AS m JOIN supply_points AS p ON p.id = m.supply_point_id WHERE p.account_id = a.id) AS meters,
        st.n AS statements, st.gross AS statements_gross_total,
        (SELECT count(*)::int FROM transactions AS x WHERE x.account_id = a.id
          AND x.transaction_id IN (SELECT i.v->>'transaction_id' FROM jsonb_items_of(r.record->'transactions') AS i(v))) AS transactions,
        (SELECT COALESCE(sum(transaction_balance_delta(x.type, x.amount)), 0) FROM transactions AS x WHERE x.account_id = a.id) AS balance_total,
        (SELECT count(*)::int FROM jsonb_items_of(r.record->'notes') AS n(v) WHERE EXISTS (SELECT 1 FROM notes AS o
          WHERE o.account_id = a.id AND md5(COALESCE(o.body, '')) = md5(COALESCE(n.v->>'body', '')))) AS notes,
        COALESCE(jsonb_typeof(r.record->'payment_instruction') = 'object'
          AND EXISTS (SELECT 1 FROM payment_instructions AS q WHERE q.account_id = a.id AND q.active), false)::int AS payment_instructions
      FROM (SELECT count(*)::int AS n, COALESCE(sum(y.gross_amount), 0) AS gross FROM statements AS y WHERE y.account_id = a.id
        AND y.statement_id IN (SELECT i.v->>'statement_id' FROM jsonb_items_of(r.record->'statements') AS i(v))) AS st
    ) AS s
    WHERE r.job_id = ${jobId}::uuid`;


/** One keyset page of the job's records, in line order, with both sides of each measure. */
export async function recordMeasuresPage(db: Db, jobId: string, supplierId: number, afterLine: number, limit: number): Promise<RecordMeasuresRow[]> {
  const { rows } = await sql<RecordMeasuresRow>`SELECT r.line, r.external_account_number, a.id IS NOT NULL AS found,
      ${MEASURE_JSON('f.')} AS file, ${MEASURE_JSON('s.')} AS migrated
    FROM ${measuredRecords(jobId, supplierId)} AND r.line > ${afterLine}
    ORDER BY r.line LIMIT ${limit}`.execute(db);
  return rows;
}

/**
 * The store's side of every measure summed over the job's records, and the number of exception lines
 * they make (one for a record the store does not hold, else one per measure that differs), in one
 * statement: the sums of money are numeric in SQL and reach JS as text, so nothing passes a float.
 */
export async function migratedTotals(db: Db, jobId: string, supplierId: number): Promise<Measured & { exceptions: number }> {
  const sums = sql.raw([...COUNT_MEASURES.map((c) => `COALESCE(sum(s.${c}), 0)::int AS ${c}`),
    ...MONEY_MEASURES.map((c) => `COALESCE(sum(s.${c}), 0)::text AS ${c}`)].join(', '));
  const differing = sql.raw([...COUNT_MEASURES, ...MONEY_MEASURES].map((c) => `(f.${c} <> s.${c})::int`).join(' + '));
  const { rows } = await sql<Measured & { exceptions: number }>`SELECT ${sums},
      COALESCE(sum(CASE WHEN a.id IS NULL THEN 1 ELSE ${differing} END), 0)::int AS exceptions
    FROM ${measuredRecords(jobId, supplierId)}`.execute(db);
  return rows[0]!;
}
