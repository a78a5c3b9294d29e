import { sql } from 'kysely';
import type { Store } from '../db/store.ts';
import { QUEUE_SCHEMA, type JobQueue } from './queue.ts';

// PGlite runs PostgreSQL in one process, without the background workers of a server: nothing
// vacuums or analyses its tables. A migration job rewrites each record's row several times (sent,
// claimed, finished) and the queue's job of each chunk as often; the dead row versions stay in those
// tables (the module's, named by the module, and the queue's own) and in the indexes that the
// dispatcher and the workers read for every chunk, and the planner has no statistics for them.
// Measured after a 30,000-record job on PGlite: those reads took 4.4–5.9 ms each (the queue's 12 ms),
// and 0.3–0.5 ms (1 ms) after one VACUUM ANALYZE. So on PGlite a scheduled job does what autovacuum
// does on a server, for those tables, every minute (it does not stop a 100,000-record job slowing
// down in its second half: bench/findings.md). On PostgreSQL nothing is scheduled: autovacuum is the
// server's.

export const VACUUM_QUEUE = 'store_vacuum';
const EVERY_MINUTE = '* * * * *';

/** The queue's own table, rewritten with every job; the modules name theirs. */
const QUEUE_JOB_TABLE = `${QUEUE_SCHEMA}.job`;

export async function defineStoreVacuum(queue: JobQueue, store: Pick<Store, 'kind'>): Promise<void> {
  if (store.kind !== 'pglite') return;
  await queue.define(VACUUM_QUEUE, { retryLimit: 0, expireInSeconds: 600 });
  await queue.schedule(VACUUM_QUEUE, EVERY_MINUTE);
}

/**
 * Vacuums and analyses the queue's job table and the modules' `tables` (PGlite's one session runs it
 * between other statements).
 */
export async function vacuumChurnedTables(store: Pick<Store, 'db'>, tables: readonly string[]): Promise<void> {
  const names = [...tables, QUEUE_JOB_TABLE].map((name) => sql.table(name));
  await sql`VACUUM (ANALYZE) ${sql.join(names)}`.execute(store.db);
}

export async function startStoreVacuum({ store, queue, tables }: {
  store: Pick<Store, 'db' | 'kind'>; queue: JobQueue; tables: readonly string[];
}): Promise<{ stop(): Promise<void> }> {
  if (store.kind !== 'pglite') return { stop: async () => {} };
  await queue.work(VACUUM_QUEUE, { concurrency: 1, pollingIntervalSeconds: 5 }, () => vacuumChurnedTables(store, tables));
  return { stop: () => queue.offWork(VACUUM_QUEUE) };
}
