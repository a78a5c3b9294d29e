import { CompiledQuery, type Kysely } from 'kysely';
import type PgBoss from 'pg-boss';
import type { Database } from '../db/schema.ts';

// Workers shared out between the owners of a queue's jobs (the organisations of migration records).
// pg-boss's own fetch takes the oldest jobs whoever they are for, so one organisation's records, all
// waiting on a vendor that never answers, could hold every worker while another organisation's
// records waited behind them. Here one loop per instance fetches for all of its workers, with its own
// statement over pg-boss's job table, and picks:
// - in turn: the job whose owner would then hold the fewest of this instance's jobs in hand, oldest
//   first among equals, so owners take turns, whoever queued more;
// - within a share: no owner takes more than half of the instance's workers while another owner has
//   jobs waiting; an owner alone takes all but one, kept free so another owner's first job starts at
//   once rather than after the jobs in hand (which may be waiting on a vendor that never answers).
// The jobs stay pg-boss's: the statement marks them active exactly as pg-boss's fetch does, and
// pg-boss completes, retries, expires and dead-letters them as any other job. The job table is read
// as hasWaiting reads it (queue.ts); the shares are per instance, the turns follow from each
// instance's own.

export interface SharedWorkOptions {
  name: string;
  /** The job data's field naming the job's owner; a job without it is owned by '' (one owner). */
  shareBy: string;
  concurrency: number;
  /** Jobs one fetch takes at most. */
  batchSize: number;
  pollingIntervalSeconds: number;
}

export interface FetchedJob<T> { id: string; data: T; retryCount: number; retryLimit: number; expireInSeconds: number }

/** The most jobs of one owner in hand on an instance: while others wait, and while none does. */
export function sharesOf(concurrency: number): { shared: number; alone: number } {
  const shared = Math.max(1, Math.floor(concurrency / 2));
  return { shared, alone: Math.max(shared, concurrency - 1) };
}

/**
 * Takes up to `limit` waiting jobs for this instance, given what each owner already holds here.
 * A row skipped because another instance locked it only leaves room: any subset of the rows that fit
 * their owner's share still fits it.
 */
export async function fetchShared<T>(
  db: Kysely<Database>, schema: string, { name, shareBy, concurrency }: Pick<SharedWorkOptions, 'name' | 'shareBy' | 'concurrency'>,
  held: ReadonlyMap<string, number>, limit: number,
): Promise<Array<FetchedJob<T>>> {
  const { shared, alone } = sharesOf(concurrency);
  const { rows } = await db.executeQuery<FetchedJob<T>>(CompiledQuery.raw(`
    WITH waiting AS (
      SELECT id, priority, created_on, coalesce(data->>$3, '') AS owner
      FROM ${schema}.job
      WHERE name = $1 AND state < 'active' AND start_after < now()
    ), owners AS (
      SELECT count(DISTINCT owner) AS n FROM waiting
    ), ranked AS (
      SELECT id, priority, created_on,
        coalesce(($4::jsonb ->> owner)::int, 0) + row_number() OVER (PARTITION BY owner ORDER BY priority DESC, created_on, id) AS holds
      FROM waiting
    ), next AS (
      SELECT j.id
      FROM ${schema}.job j JOIN ranked r ON r.id = j.id CROSS JOIN owners o
      WHERE j.name = $1 AND j.state < 'active' AND r.holds <= CASE WHEN o.n > 1 THEN $5::int ELSE $6::int END
      ORDER BY r.holds, r.priority DESC, r.created_on, r.id
      LIMIT $2
      FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE ${schema}.job j SET
      state = 'active',
      started_on = now(),
      retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END
    FROM next
    WHERE j.name = $1 AND j.id = next.id
    RETURNING j.id, j.data, j.retry_count AS "retryCount", j.retry_limit AS "retryLimit",
      EXTRACT(epoch FROM j.expire_in)::float8 AS "expireInSeconds"`,
  [name, limit, shareBy, JSON.stringify(Object.fromEntries(held)), shared, alone]));
  return rows;
}

export interface SharedWorker {
  /** Stops fetching; the jobs in hand run on (queue.ts waits for them). */
  stop(): void;
}

/**
 * One fetch loop for the instance's `concurrency` workers of the queue. A job finished frees its
 * worker at once, and the loop fetches again at once; only a fetch that found less than it asked for
 * waits (the polling interval, or until a worker is freed, which may let an owner take more).
 */
export function startSharedWorker<T>(
  boss: PgBoss, db: Kysely<Database>, schema: string, options: SharedWorkOptions,
  run: (job: FetchedJob<T>) => Promise<void>, onError: (error: Error) => void,
): SharedWorker {
  const held = new Map<string, number>();
  let inHand = 0;
  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { wake = undefined; resolve(); }, ms);
    wake = () => { clearTimeout(timer); wake = undefined; resolve(); };
  });
  const ownerOf = (job: FetchedJob<T>) => String((job.data as Record<string, unknown> | null)?.[options.shareBy] ?? '');

  const settle = async (job: FetchedJob<T>) => {
    const owner = ownerOf(job);
    // As pg-boss's own workers: a job still running at its expiry is failed (and retried); its worker
    // stays taken until the handler returns, so the shares count what really runs.
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`handler execution exceeded ${job.expireInSeconds * 1000}ms`)), Math.max(1, job.expireInSeconds) * 1000);
    });
    const running = run(job);
    let failure: unknown;
    try {
      await Promise.race([running, expired]);
    } catch (error) {
      failure = error ?? new Error('failed');
    } finally {
      clearTimeout(timer);
    }
    const settling = failure === undefined ? boss.complete(options.name, job.id) : boss.fail(options.name, job.id, failure as object);
    await settling.catch((error: unknown) => onError(error as Error));
    await running.catch(() => undefined);
    held.set(owner, (held.get(owner) ?? 1) - 1);
    if (held.get(owner) === 0) held.delete(owner);
    inHand -= 1;
    wake?.();
  };

  const loop = async () => {
    while (!stopped) {
      const room = options.concurrency - inHand;
      if (room <= 0) {
        await pause(60_000);
        continue;
      }
      const limit = Math.min(room, options.batchSize);
      let jobs: Array<FetchedJob<T>> = [];
      try {
        jobs = await fetchShared<T>(db, schema, options, held, limit);
      } catch (error) {
        onError(error as Error);
      }
      for (const job of jobs) {
        held.set(ownerOf(job), (held.get(ownerOf(job)) ?? 0) + 1);
        inHand += 1;
        void settle(job).catch((error: unknown) => onError(error as Error));
      }
      if (jobs.length < limit && !stopped) await pause(options.pollingIntervalSeconds * 1000);
    }
  };
  void loop();
  return {
    stop() {
      stopped = true;
      wake?.();
    },
  };
}
