import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../core/errors.ts';
import { precompiled } from '../../db/precompiled.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../events/index.ts';

// The one way every import onto an account (notes, transactions, statements) finds its account.
// It takes a Transaction so it cannot be called outside one: the row lock it takes serialises every
// import onto the same account, which is what makes dedupe and the open statement period hold under
// concurrent identical posts (D8). Only a created account counts; staged data alone is not found.
export async function lockImportedAccount(
  trx: Transaction<Database>, supplierId: number, externalAccountNumber: string,
): Promise<{ id: number }> {
  const [account] = await lockQuery(trx, supplierId, externalAccountNumber);
  if (!account) throw accountNotFound(externalAccountNumber);
  return account;
}

// Every import runs it: compiled once and prepared (the unique key is the only index it can use).
const lockQuery = precompiled(2, (qb, supplierId: number, externalAccountNumber: string) => qb.selectFrom('accounts').select('id')
  .where('supplier_id', '=', supplierId).where('external_account_number', '=', externalAccountNumber)
  .forUpdate(), { serverPrepared: true });

/**
 * The same lookup without a lock, for an import that must not hold a transaction open (the payment
 * instruction calls its vendor first). Throws the same 404.
 */
export async function findImportedAccount(
  db: Kysely<Database>, supplierId: number, externalAccountNumber: string,
): Promise<{ id: number; number: string }> {
  const account = await db.selectFrom('accounts').select(['id', 'number'])
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', externalAccountNumber)
    .executeTakeFirst();
  if (!account) throw accountNotFound(externalAccountNumber);
  return account;
}

export function accountNotFound(externalAccountNumber: string, attr: string | null = 'external_account_number'): AppError {
  const detail = `No imported account "${externalAccountNumber}" for this import supplier.`;
  return attr ? AppError.field('account_not_found', detail, attr) : new AppError('account_not_found', detail);
}

/**
 * What an import onto an account is built with (notes, statements, transactions, payment
 * instructions): the store handle, the process's events and clock. `on(db)` on each import module
 * gives the same module over another handle of the store (a pre-flight's rehearsal, db/rehearsal.ts).
 */
export interface ImportDeps { db: Kysely<Database>; events: Events; clock: Clock }
