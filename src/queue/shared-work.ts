import { CompiledQuery, type Kysely } from 'kysely';
import type PgBoss from 'pg-boss';
import type { Database } from '../db/schema.ts';

// Workers shared out between the organisations a queue's jobs are for (migration records, webhook
// deliveries). pg-boss's own fetch takes the oldest jobs whoever they are for, so one organisation's
// work, all waiting on a server that never answers, could hold every worker while another
// organisation's waited behind it. Here one loop per instance fetches for all of its workers, with
// its own statement over pg-boss's job table, and picks:
// - in turn: the job whose organisation would then hold the fewest of this instance's jobs in hand,
//   the one due first among equals, so organisations take turns, whoever queued more;
// - within a share: no organisation takes more than half of the instance's workers while another has
//   jobs waiting; one alone takes all but one, kept free so another's first job starts at once rather
//   than after the jobs in hand (which may be waiting on a server that never answers).
// The jobs stay pg-boss's: the statement marks them active exactly as pg-boss's fetch does, and
// pg-boss completes, retries, expires and dead-letters them as any other job. The shares are per
// instance; the turns follow from each instance's own.
//
// A fetch reads a bounded number of rows however many jobs wait: the organisations with jobs waiting,
// found one index probe each (a skip scan), and at most `limit` jobs of each, due first. The index
// (organisationIndexSql, made when the queue starts) is over the organisation each job's data names
// in its `org` field; a job without one belongs to '' (one organisation).

/** The job data's field naming the organisation a job is for. */
export const ORGANISATION_FIELD = 'org';

/**
 * What the data of a job on a shared queue carries: the id of the organisation it is for, under the
 * field the fetch and its index read (a job type that spelled it otherwise would share as one organisation).
 */
export type ForOrganisation = { [field in typeof ORGANISATION_FIELD]?: number };
const ORGANISATION = `coalesce(data->>'${ORGANISATION_FIELD}', '')`;

/**
 * The jobs a fetch tries to lock for each it takes: the first in line, so that jobs another instance
 * is taking at the same moment (skipped) leave this one others to take, while the job table is read
 * by its primary key, a few rows, not scanned.
 */
const PICKS_PER_JOB = 4;

/** The index the shared fetch reads pg-boss's job table by; made on its partitioned table, so on every queue's partition. */
export function organisationIndexSql(schema: string): string {
  return `CREATE INDEX IF NOT EXISTS job_organisation_due ON ${schema}.job (name, (${ORGANISATION}), start_after, id) WHERE state < 'active'`;
}

export interface SharedWorkOptions {
  name: string;
  concurrency: number;
  /** Jobs one fetch takes at most. */
  batchSize: number;
  pollingIntervalSeconds: number;
  /** The jobs of one fetch are run by one call together (and succeed or fail together), rather than one call each. */
  together: boolean;
}

export interface FetchedJob<T> { id: string; data: T; retryCount: number; retryLimit: number; expireInSeconds: number }

/** The most jobs of one organisation in hand on an instance: while others wait, and while none does. */
export function sharesOf(concurrency: number): { shared: number; alone: number } {
  const shared = Math.max(1, Math.floor(concurrency / 2));
  return { shared, alone: Math.max(shared, concurrency - 1) };
}

/**
 * Takes up to `limit` waiting jobs for this instance, given what each organisation already holds here.
 * A row skipped because another instance locked it only leaves room: any subset of the rows that fit
 * their organisation's share still fits it.
 */
export async function fetchShared<T>(
  db: Kysely<Database>, schema: string, { name, concurrency }: Pick<SharedWorkOptions, 'name' | 'concurrency'>,
  held: ReadonlyMap<string, number>, limit: number,
): Promise<Array<FetchedJob<T>>> {
  const { shared, alone } = sharesOf(concurrency);
  const { rows } = await db.executeQuery<FetchedJob<T>>(CompiledQuery.raw(`
    WITH RECURSIVE organisations AS (
      (SELECT ${ORGANISATION} AS org FROM ${schema}.job
        WHERE name = $1 AND state < 'active' ORDER BY ${ORGANISATION} LIMIT 1)
      UNION ALL
      SELECT (SELECT ${ORGANISATION} FROM ${schema}.job
        WHERE name = $1 AND state < 'active' AND ${ORGANISATION} > o.org ORDER BY ${ORGANISATION} LIMIT 1)
      FROM organisations o WHERE o.org IS NOT NULL
    ), due AS (
      SELECT d.id, d.start_after, o.org,
        coalesce(($3::jsonb ->> o.org)::int, 0) + row_number() OVER (PARTITION BY o.org ORDER BY d.start_after, d.id) AS holds
      FROM organisations o CROSS JOIN LATERAL (
        SELECT id, start_after FROM ${schema}.job
        WHERE name = $1 AND state < 'active' AND ${ORGANISATION} = o.org AND start_after < now()
        ORDER BY start_after, id LIMIT $2
      ) d
      WHERE o.org IS NOT NULL
    ), waiting AS (
      SELECT count(DISTINCT org) AS n FROM due
    ), picks AS (
      SELECT r.id, r.holds, r.start_after FROM due r CROSS JOIN waiting w
      WHERE r.holds <= CASE WHEN w.n > 1 THEN $4::int ELSE $5::int END
      ORDER BY r.holds, r.start_after, r.id
      LIMIT $2 * ${PICKS_PER_JOB}
    ), next AS (
      SELECT j.id
      FROM picks r JOIN ${schema}.job j ON j.name = $1 AND j.id = r.id
      WHERE j.state < 'active'
      ORDER BY r.holds, r.start_after, r.id
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
  [name, limit, JSON.stringify(Object.fromEntries(held)), shared, alone]));
  return rows;
}

export interface SharedWorker {
  /** Stops fetching; the jobs in hand run on (queue.ts waits for them). */
  stop(): void;
}

/**
 * One fetch loop for the instance's `concurrency` workers of the queue. A job finished frees its
 * worker at once, and the loop fetches again at once; only a fetch that found less than it asked for
 * waits (the polling interval, or until a worker is freed, which may let an organisation take more).
 * `run` is given one job a call, or each fetch's jobs together (`together`).
 */
export function startSharedWorker<T>(
  boss: PgBoss, db: Kysely<Database>, schema: string, options: SharedWorkOptions,
  run: (jobs: Array<FetchedJob<T>>) => Promise<void>, onError: (error: Error) => void,
): SharedWorker {
  const held = new Map<string, number>();
  let inHand = 0;
  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { wake = undefined; resolve(); }, ms);
    wake = () => { clearTimeout(timer); wake = undefined; resolve(); };
  });
  const organisationOf = (job: FetchedJob<T>) => String((job.data as Record<string, unknown> | null)?.[ORGANISATION_FIELD] ?? '');

  const settle = async (jobs: Array<FetchedJob<T>>) => {
    // As pg-boss's own workers: jobs still running at their expiry are failed (and retried); their
    // workers stay taken until the handler returns, so the shares count what really runs.
    const expireInSeconds = Math.max(1, Math.min(...jobs.map((job) => job.expireInSeconds)));
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`handler execution exceeded ${expireInSeconds * 1000}ms`)), expireInSeconds * 1000);
    });
    const running = run(jobs);
    let failure: unknown;
    try {
      await Promise.race([running, expired]);
    } catch (error) {
      failure = error ?? new Error('failed');
    } finally {
      clearTimeout(timer);
    }
    const ids = jobs.map((job) => job.id);
    const settling = failure === undefined ? boss.complete(options.name, ids) : boss.fail(options.name, ids, failure as object);
    await settling.catch((error: unknown) => onError(error as Error));
    await running.catch(() => undefined);
    for (const job of jobs) {
      const organisation = organisationOf(job);
      held.set(organisation, (held.get(organisation) ?? 1) - 1);
      if (held.get(organisation) === 0) held.delete(organisation);
    }
    inHand -= jobs.length;
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
      for (const job of jobs) held.set(organisationOf(job), (held.get(organisationOf(job)) ?? 0) + 1);
      inHand += jobs.length;
      const runs = options.together ? (jobs.length > 0 ? [jobs] : []) : jobs.map((job) => [job]);
      for (const batch of runs) void settle(batch).catch((error: unknown) => onError(error as Error));
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
