import { CompiledQuery, type Kysely } from 'kysely';
import type PgBoss from 'pg-boss';
import type { Database } from '../db/schema.ts';

// Workers shared out between the organisations a queue's jobs are for (migration records, webhook
// deliveries), and within an organisation between its lanes (a webhook endpoint). pg-boss's own fetch
// takes the oldest jobs whoever they are for, so one organisation's work, all waiting on a server
// that never answers, could hold every worker while another organisation's waited behind it; and
// one endpoint that never answers could hold its organisation's share while the organisation's
// other endpoints waited. Here one loop per instance fetches for all of its workers, with its own
// statement over pg-boss's job table, and picks:
// - in turn: the job whose organisation would then hold the fewest of this instance's jobs in hand,
//   the one due first among equals, so organisations take turns, whoever queued more; within an
//   organisation, its lanes take turns the same way;
// - within a share: no organisation takes more than half of the instance's workers while another has
//   jobs waiting; one alone takes all but one, kept free so another's first job starts at once rather
//   than after the jobs in hand (which may be waiting on a server that never answers). An
//   organisation's share is shared out between its lanes by the same rule.
// The jobs stay pg-boss's: the statement marks them active exactly as pg-boss's fetch does, and
// pg-boss completes, retries, expires and dead-letters them as any other job. The shares are per
// instance; the turns follow from each instance's own.
//
// A fetch reads a bounded number of rows however many jobs wait: the lanes with jobs waiting, found
// one index probe each (a skip scan), and at most `limit` jobs of each, due first. The index
// (organisationIndexSql, made when the queue starts) is over the organisation and the lane each
// job's data names in its `org` and `lane` fields; a job without them belongs to '' (one
// organisation, one lane).

/** The job data's field naming the organisation a job is for. */
export const ORGANISATION_FIELD = 'org';
/** The job data's field naming the lane, within its organisation, a job is in. */
export const LANE_FIELD = 'lane';

/**
 * What the data of a job on a shared queue carries: the id of the organisation it is for, and the
 * lane within it (jobs whose slowness is their own, such as one endpoint's deliveries), under the
 * fields the fetch and its index read (a job type that spelled them otherwise would share as one).
 */
export type ForOrganisation = { [field in typeof ORGANISATION_FIELD]?: number } & { [field in typeof LANE_FIELD]?: string };
const ORGANISATION = `coalesce(data->>'${ORGANISATION_FIELD}', '')`;
const LANE = `coalesce(data->>'${LANE_FIELD}', '')`;

/**
 * The jobs a fetch tries to lock for each it takes: the first in line, so that jobs another instance
 * is taking at the same moment (skipped) leave this one others to take, while the job table is read
 * by its primary key, a few rows, not scanned.
 */
const PICKS_PER_JOB = 4;

/**
 * The index the shared fetch reads pg-boss's job table by; made on its partitioned table, so on every
 * queue's partition. The one before lanes (organisation only) is dropped.
 */
export function organisationIndexSql(schema: string): string[] {
  return [
    `CREATE INDEX IF NOT EXISTS job_organisation_lane_due ON ${schema}.job (name, (${ORGANISATION}), (${LANE}), start_after, id) WHERE state < 'active'`,
    `DROP INDEX IF EXISTS ${schema}.job_organisation_due`,
  ];
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

/**
 * The most jobs of one organisation in hand on an instance: while others wait, and while none does.
 * Given an organisation's share, the same for one of its lanes.
 */
export function sharesOf(concurrency: number): { shared: number; alone: number } {
  const shared = Math.max(1, Math.floor(concurrency / 2));
  return { shared, alone: Math.max(shared, concurrency - 1) };
}

/** What an instance holds of a queue's jobs: per organisation, and per lane within each. */
export interface Holdings {
  organisations: ReadonlyMap<string, number>;
  lanes: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/**
 * Takes up to `limit` waiting jobs for this instance, given what each organisation and lane already
 * holds here. A row skipped because another instance locked it only leaves room: any subset of the
 * rows that fit their shares still fits them.
 */
export async function fetchShared<T>(
  db: Kysely<Database>, schema: string, { name, concurrency }: Pick<SharedWorkOptions, 'name' | 'concurrency'>,
  held: Holdings, limit: number,
): Promise<Array<FetchedJob<T>>> {
  const { shared, alone } = sharesOf(concurrency);
  const lanesHeld = Object.fromEntries([...held.lanes].map(([org, lanes]) => [org, Object.fromEntries(lanes)]));
  // The shares of a lane follow sharesOf, given its organisation's share (`cap`); jobs in no lane
  // ('') alone in their organisation take all of its share, as they did before there were lanes.
  const { rows } = await db.executeQuery<FetchedJob<T>>(CompiledQuery.raw(`
    WITH RECURSIVE lanes AS (
      (SELECT ${ORGANISATION} AS org, ${LANE} AS lane FROM ${schema}.job
        WHERE name = $1 AND state < 'active' ORDER BY ${ORGANISATION}, ${LANE} LIMIT 1)
      UNION ALL
      SELECT n.org, n.lane FROM lanes o CROSS JOIN LATERAL (
        SELECT ${ORGANISATION} AS org, ${LANE} AS lane FROM ${schema}.job
        WHERE name = $1 AND state < 'active' AND (${ORGANISATION}, ${LANE}) > (o.org, o.lane)
        ORDER BY ${ORGANISATION}, ${LANE} LIMIT 1
      ) n
    ), due AS (
      SELECT d.id, d.start_after, l.org, l.lane,
        coalesce(($6::jsonb -> l.org ->> l.lane)::int, 0) + row_number() OVER (PARTITION BY l.org, l.lane ORDER BY d.start_after, d.id) AS lane_holds
      FROM lanes l CROSS JOIN LATERAL (
        SELECT id, start_after FROM ${schema}.job
        WHERE name = $1 AND state < 'active' AND ${ORGANISATION} = l.org AND ${LANE} = l.lane AND start_after < now()
        ORDER BY start_after, id LIMIT $2
      ) d
    ), shares AS (
      SELECT org, count(DISTINCT lane) AS lanes,
        CASE WHEN count(*) OVER () > 1 THEN $4::int ELSE $5::int END AS cap
      FROM due GROUP BY org
    ), fitting AS (
      SELECT r.id, r.start_after, r.org, r.lane_holds, s.cap FROM due r JOIN shares s USING (org)
      WHERE r.lane_holds <= CASE WHEN s.lanes > 1 THEN greatest(1, s.cap / 2) WHEN r.lane = '' THEN s.cap ELSE greatest(1, s.cap / 2, s.cap - 1) END
    ), ranked AS (
      SELECT f.id, f.start_after, f.cap,
        coalesce(($3::jsonb ->> f.org)::int, 0) + row_number() OVER (PARTITION BY f.org ORDER BY f.lane_holds, f.start_after, f.id) AS holds
      FROM fitting f
    ), picks AS (
      SELECT r.id, r.holds, r.start_after FROM ranked r
      WHERE r.holds <= r.cap
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
  [name, limit, JSON.stringify(Object.fromEntries(held.organisations)), shared, alone, JSON.stringify(lanesHeld)]));
  return rows;
}

/** The organisation and the lane a job is in, as the fetch and its index read them from its data ('' for none). */
function laneOf(job: FetchedJob<unknown>): { organisation: string; lane: string } {
  const data = job.data as Record<string, unknown> | null;
  return { organisation: String(data?.[ORGANISATION_FIELD] ?? ''), lane: String(data?.[LANE_FIELD] ?? '') };
}

export interface SharedWorker {
  /** Stops fetching; the jobs in hand run on (queue.ts waits for them). */
  stop(): void;
}

/**
 * One fetch loop for the instance's `concurrency` workers of the queue. A job finished frees its
 * worker at once, and the loop fetches again at once; only a fetch that found less than it asked for
 * waits (the polling interval, or until a worker is freed, which may let an organisation take more).
 * `run` is given one job a call, or each fetch's jobs of one lane together (`together`): a lane's
 * slowness (an endpoint that never answers) holds its own jobs only.
 */
export function startSharedWorker<T>(
  boss: PgBoss, db: Kysely<Database>, schema: string, options: SharedWorkOptions,
  run: (jobs: Array<FetchedJob<T>>) => Promise<void>, onError: (error: Error) => void,
): SharedWorker {
  const organisations = new Map<string, number>();
  const lanes = new Map<string, Map<string, number>>();
  const held: Holdings = { organisations, lanes };
  const count = (job: FetchedJob<T>, n: 1 | -1) => {
    const { organisation, lane } = laneOf(job);
    const ofOrganisation = lanes.get(organisation) ?? new Map<string, number>();
    organisations.set(organisation, (organisations.get(organisation) ?? 0) + n);
    ofOrganisation.set(lane, (ofOrganisation.get(lane) ?? 0) + n);
    if (ofOrganisation.get(lane)! <= 0) ofOrganisation.delete(lane);
    if (organisations.get(organisation)! <= 0) organisations.delete(organisation);
    if (ofOrganisation.size === 0) lanes.delete(organisation);
    else lanes.set(organisation, ofOrganisation);
  };
  let inHand = 0;
  let stopped = false;
  let wake: (() => void) | undefined;
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => { wake = undefined; resolve(); }, ms);
    wake = () => { clearTimeout(timer); wake = undefined; resolve(); };
  });
  const byLane = (jobs: Array<FetchedJob<T>>) => {
    const runs = new Map<string, Array<FetchedJob<T>>>();
    for (const job of jobs) {
      const { organisation, lane } = laneOf(job);
      const key = JSON.stringify([organisation, lane]);
      const run = runs.get(key);
      if (run) run.push(job);
      else runs.set(key, [job]);
    }
    return [...runs.values()];
  };

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
    for (const job of jobs) count(job, -1);
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
      for (const job of jobs) count(job, 1);
      inHand += jobs.length;
      const runs = options.together ? byLane(jobs) : jobs.map((job) => [job]);
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
