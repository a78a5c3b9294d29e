import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.ts';

/** One slice of a sliced read, in its transaction: `slice` counts from 0. */
export type SliceRead<T> = (trx: Transaction<Database>, slice: number) => Promise<T>;

/**
 * Runs `read` once per slice, every slice in a read-only REPEATABLE READ transaction and all of them
 * in one snapshot of the store, and answers their results in slice order.
 *
 * With `concurrent`, each slice has a connection of its own and they run at the same time: the first
 * exports its snapshot (`pg_export_snapshot`) and the others start from it (`SET TRANSACTION
 * SNAPSHOT`), so a long read uses several of the server's cores and still sees one moment of the
 * store. Otherwise (PGlite's one session, or a pool already lending enough connections to sliced
 * reads) the slices run one after another in one transaction. Either way a failing slice fails the
 * read, after every slice has ended.
 */
export async function readSliced<T>(db: Kysely<Database>, slices: number, concurrent: boolean, read: SliceRead<T>): Promise<T[]> {
  const begin = () => db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only');
  if (!concurrent || slices < 2) {
    return begin().execute(async (trx) => {
      const results: T[] = [];
      for (let slice = 0; slice < slices; slice++) results.push(await read(trx, slice));
      return results;
    });
  }
  return begin().execute(async (first) => {
    const { rows } = await sql<{ snapshot: string }>`SELECT pg_export_snapshot() AS snapshot`.execute(first);
    const snapshot = rows[0]!.snapshot;
    const others = Array.from({ length: slices - 1 }, (_, i) => begin().execute(async (trx) => {
      await sql`SET TRANSACTION SNAPSHOT ${sql.lit(snapshot)}`.execute(trx);
      return read(trx, i + 1);
    }));
    const settled = await Promise.allSettled([read(first, 0), ...others]);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
  });
}
