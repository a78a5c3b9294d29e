import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.ts';

// A rehearsal: work written against an ordinary database handle, run for real inside ONE transaction
// that is always rolled back. The services it calls open transactions of their own
// (`db.transaction().execute(...)`); on the rehearsal's handle each of those is a savepoint of the
// one transaction, so a service that fails rolls back its own part exactly as it would alone, and
// the next one sees what the earlier ones wrote. Every rule therefore runs as the real path runs it,
// against the rows the earlier steps would have written, and nothing is left behind: no row, no
// event, no count, no queued job (they are all rows of the same transaction).
//
// Everything the work touches must go through the handle it is given: on PGlite, which has one
// session, a query on another handle would wait for the rehearsal to end.

class Rehearsed<T> extends Error {
  constructor(readonly value: T) { super('rehearsal rolled back'); }
}

export async function rehearse<T>(db: Kysely<Database>, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  try {
    await db.transaction().execute(async (trx) => {
      throw new Rehearsed(await work(nested(trx)));
    });
  } catch (error) {
    if (error instanceof Rehearsed) return error.value as T;
    throw error;
  }
  throw new Error('unreachable: a rehearsal always rolls back');
}

/** The transaction as a database handle whose own transactions are savepoints. */
function nested(trx: Transaction<Database>): Kysely<Database> {
  let savepoints = 0;
  const transaction = () => {
    const builder = {
      // The outer transaction's isolation holds for the whole rehearsal.
      setIsolationLevel: () => builder,
      execute: async <R>(callback: (trx: Transaction<Database>) => Promise<R>): Promise<R> => {
        savepoints += 1;
        const name = sql.id(`rehearsal_${savepoints}`);
        await sql`SAVEPOINT ${name}`.execute(trx);
        try {
          const result = await callback(handle as unknown as Transaction<Database>);
          await sql`RELEASE SAVEPOINT ${name}`.execute(trx);
          return result;
        } catch (error) {
          await sql`ROLLBACK TO SAVEPOINT ${name}`.execute(trx);
          throw error;
        }
      },
    };
    return builder;
  };
  const handle: Kysely<Database> = new Proxy(trx, {
    get(target, property) {
      if (property === 'transaction') return transaction;
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return handle;
}
