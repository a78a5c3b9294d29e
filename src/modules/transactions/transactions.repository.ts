import { sql, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import type { Database, TransactionsTable } from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';

type Trx = Transaction<Database>;
export type TransactionRow = Selectable<TransactionsTable>;

/** A transaction's columns, named (a prepared statement's result must not follow the table's). */
const TRANSACTION_COLUMNS = sql.raw(['id', 'account_id', 'transaction_id', 'transaction_date', 'original_date', 'amount', 'type', 'reason',
  'display_note', 'note', 'reference', 'payment_type', 'product_code', 'line_items', 'tax_items', 'description', 'created_at'].join(', '));

/**
 * First day of the account's open statement period (D8): the day after the latest imported
 * historical statement ends; null when there is none (open from the start). An expression, so the
 * import reads it with the transactions in one round trip.
 */
const openPeriodStart = (accountId: number) =>
  sql<string | null>`(SELECT max(bill_period_to_date) + 1 FROM statements WHERE account_id = ${accountId}::int8)`;

export async function findOpenPeriodStart(db: Kysely<Database> | Trx, accountId: number): Promise<string | null> {
  const row = await db.selectNoFrom(openPeriodStart(accountId).as('start')).executeTakeFirstOrThrow();
  return row.start;
}

/**
 * What an import reads under the account's lock, in one round trip: the open period's first day
 * (findOpenPeriodStart), the account's transactions among `transactionIds` (one jsonb parameter for
 * the whole list, as for the insert below), and the balance bound's verdict on `batch`: the first of
 * its items (in order) not among those found at which the account's balance, from what it holds now,
 * would leave ±MAX_BALANCE, with that balance (null when the batch keeps it in range). The bound is
 * summed over numeric from the balance kept on the account row (migration 015), which the caller
 * holds locked, so the cost is the batch's whatever the account's history.
 */
export async function readUnderAccountLock(
  trx: Trx, accountId: number, transactionIds: string[], batch: Array<Pick<NewTransactionValues, 'transaction_id' | 'amount' | 'type'>>,
): Promise<{ periodStart: string | null; existing: TransactionRow[]; overflow: { transactionId: string; balance: string } | null }> {
  const { rows } = await sql<TransactionRow & { open_period_start: string | null; overflow_id: string | null; overflow_balance: string | null }>`${sql.raw(SERVER_PREPARED)}
    WITH existing AS (
      SELECT ${TRANSACTION_COLUMNS} FROM transactions
      WHERE account_id = ${accountId}::int8 AND transaction_id IN (SELECT jsonb_array_elements_text(${JSON.stringify(transactionIds)}::jsonb))
    ), running AS (
      SELECT x.ord, x.item->>'transaction_id' AS overflow_id, (SELECT balance FROM accounts WHERE id = ${accountId}::int8)
        + sum(transaction_balance_delta(x.item->>'type', (x.item->>'amount')::numeric)) OVER (ORDER BY x.ord) AS balance
      FROM jsonb_array_elements(${JSON.stringify(batch)}::jsonb) WITH ORDINALITY AS x(item, ord)
      WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.transaction_id = x.item->>'transaction_id')
    ), overflow AS (
      SELECT overflow_id, balance::text AS overflow_balance FROM running WHERE abs(balance) > ${MAX_BALANCE}::numeric ORDER BY ord LIMIT 1
    )
    SELECT ${openPeriodStart(accountId)} AS open_period_start, o.overflow_id, o.overflow_balance, ${TRANSACTION_COLUMNS}
    FROM (SELECT) AS one -- one row: the period and the verdict are answered when none of the transactions is there
    LEFT JOIN overflow AS o ON true
    LEFT JOIN existing ON true`.execute(trx);
  const first = rows[0];
  return {
    periodStart: first?.open_period_start ?? null,
    existing: rows.filter((row) => row.id !== null).map(({ open_period_start: _, overflow_id: _id, overflow_balance: _b, ...row }) => row),
    overflow: first?.overflow_id != null && first.overflow_balance != null ? { transactionId: first.overflow_id, balance: first.overflow_balance } : null,
  };
}

/**
 * One statement for the whole batch, its rows sent as ONE jsonb parameter rather than ~15 bind
 * parameters a row (a batch of 500 would otherwise be 7,500 parameters to bind and parse). A
 * transaction_id already on the account is left out by the unique constraint (not looked up first),
 * so the caller sees it missing from what came back. Only the ids come back: a written row holds
 * what was sent, so the caller answers from its own values rather than reading every column back.
 * Built and not yet run: it travels with the import's event (recordEventsWith).
 */
export function transactionsInsert(accountId: number, rows: NewTransactionValues[]): RawBuilder<{ transaction_id: string }> {
  return insertMany(rows.map((row) => ({ account_id: accountId, ...row })), sql`transaction_id`);
}

/**
 * transactionsInsert for the rows of many accounts (a migration job's set of new accounts), each row
 * naming its account; answering only each written row's id, as such a writer needs only their count.
 */
export function transactionsInsertMany(rows: Array<NewTransactionValues & { account_id: number }>): RawBuilder<{ id: number }> {
  return insertMany(rows, sql`id`);
}

function insertMany<Row>(rows: Array<NewTransactionValues & { account_id: number }>, returning: RawBuilder<unknown>): RawBuilder<Row> {
  return sql<Row>`
    INSERT INTO transactions (account_id, transaction_id, transaction_date, original_date, amount, type, reason,
      display_note, note, reference, payment_type, product_code, line_items, tax_items, description)
    SELECT x.account_id, x.transaction_id, x.transaction_date, x.original_date, x.amount, x.type, x.reason,
      x.display_note, x.note, x.reference, x.payment_type, x.product_code, x.line_items, x.tax_items, x.description
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(account_id int8, transaction_id text, transaction_date date,
      original_date date, amount numeric, type text, reason text, display_note text, note text, reference text,
      payment_type text, product_code text, line_items jsonb, tax_items jsonb, description text)
    ON CONFLICT (account_id, transaction_id) DO NOTHING
    RETURNING ${returning}`;
}

/**
 * A transaction to insert: every value as the column takes it (none left to a default but the row's
 * id and time), jsonb fields as values (not text). What a caller answers for a row it wrote.
 */
export type NewTransactionValues = Omit<TransactionRow, 'id' | 'account_id' | 'created_at' | 'line_items' | 'tax_items'> & {
  line_items: unknown; tax_items: unknown;
};

/**
 * The balance in SQL over numeric, never in JS floats, as kept on the account (migration 015's
 * transaction_balance_delta says how each transaction moves it). Sign convention: positive means the
 * account is in credit. CREDIT and PAYMENT add to it; CHARGE, SUPPLY_CHARGE and REPAYMENT (money
 * paid back to the customer) take from it.
 */
export async function findBalance(db: Kysely<Database>, accountId: number): Promise<{ balance: string; count: number }> {
  const row = await db.selectFrom('accounts')
    .select([
      // Plain numeric, never cast to a narrower type: a balance past any fixed precision (rows stored
      // before the balance bound, issue #14) still reads instead of failing with 22003.
      sql<string>`round(balance, 2)`.as('balance'),
      (eb) => eb.selectFrom('transactions').select(eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).as('count'),
    ])
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow();
  return { balance: row.balance, count: Number(row.count) };
}

/** What an account's balance may reach either way: what numeric(16, 2) holds, 100 times the largest amount. */
export const MAX_BALANCE = '99999999999999.99';
