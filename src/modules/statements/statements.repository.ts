import type { Insertable, Transaction } from 'kysely';
import type { Database, StatementsTable } from '../../db/schema.ts';
import { precompiled, type Executor } from '../../db/precompiled.ts';

const statementsQuery = precompiled(1, (qb, accountId: number) => qb.selectFrom('statements')
  .select(['statement_id', 'bill_period_from_date', 'bill_period_to_date', 'issued_date', 'number', 'gross_amount', 'statement_path'])
  .where('account_id', '=', accountId)
  .orderBy('bill_period_from_date').orderBy('statement_id'), { serverPrepared: true });

/** The account's statements in period order (an import reads them under the account's lock). */
export function findStatements(db: Executor, accountId: number) {
  return statementsQuery(db, accountId);
}
export type StatementRow = Awaited<ReturnType<typeof findStatements>>[number];

/** The insert of a request's new statements, built and not yet run (it travels with the import's event). */
export function statementsInsert(trx: Transaction<Database>, rows: Insertable<StatementsTable>[]) {
  return trx.insertInto('statements').values(rows).returning('id');
}
