import { sql, type Insertable, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { Database, TransactionsTable } from '../../db/schema.ts';

type Trx = Transaction<Database>;
export type TransactionRow = Selectable<TransactionsTable>;
export type NewTransaction = Insertable<TransactionsTable>;

/**
 * First day of the account's open statement period (D8): the day after the latest imported
 * historical statement ends; null when there is none (open from the start).
 */
export async function findOpenPeriodStart(db: Kysely<Database> | Trx, accountId: number): Promise<string | null> {
  const row = await db.selectFrom('statements')
    .select(sql<string | null>`max(bill_period_to_date) + 1`.as('start'))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.start ?? null;
}

export function findTransactionsById(trx: Trx, accountId: number, transactionIds: string[]) {
  return trx.selectFrom('transactions').selectAll()
    .where('account_id', '=', accountId).where('transaction_id', 'in', transactionIds)
    .execute();
}

/**
 * One multi-row insert for the whole batch. A transaction_id already on the account is left out by
 * the unique constraint (not looked up first), so the caller sees it missing from what came back.
 */
export function insertTransactions(trx: Trx, rows: NewTransaction[]): Promise<TransactionRow[]> {
  return trx.insertInto('transactions').values(rows)
    .onConflict((oc) => oc.columns(['account_id', 'transaction_id']).doNothing())
    .returningAll()
    .execute();
}

/**
 * The balance in SQL over numeric, never in JS floats. Sign convention: positive means the account
 * is in credit. CREDIT and PAYMENT add to it; CHARGE, SUPPLY_CHARGE and REPAYMENT (money paid back
 * to the customer) take from it.
 */
export async function findBalance(db: Kysely<Database>, accountId: number): Promise<{ balance: string; count: number }> {
  const row = await db.selectFrom('transactions')
    .select([
      sql<string>`coalesce(sum(case when type in ('CREDIT', 'PAYMENT') then amount else -amount end), 0)::numeric(16, 2)`.as('balance'),
      (eb) => eb.fn.countAll<number>().as('count'),
    ])
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return { balance: row.balance, count: Number(row.count) };
}
