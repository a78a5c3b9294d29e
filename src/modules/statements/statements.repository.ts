import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database, StatementsTable } from '../../db/schema.ts';
import { executePrepared } from '../../db/server-prepared.ts';

export function findStatements(db: Kysely<Database> | Transaction<Database>, accountId: number) {
  return executePrepared(db, db.selectFrom('statements')
    .select(['statement_id', 'bill_period_from_date', 'bill_period_to_date', 'issued_date', 'number', 'gross_amount', 'statement_path'])
    .where('account_id', '=', accountId)
    .orderBy('bill_period_from_date').orderBy('statement_id'));
}
export type StatementRow = Awaited<ReturnType<typeof findStatements>>[number];

/** The insert of a request's new statements, built and not yet run (it travels with the import's event). */
export function statementsInsert(trx: Transaction<Database>, rows: Insertable<StatementsTable>[]) {
  return trx.insertInto('statements').values(rows).returning('id');
}
