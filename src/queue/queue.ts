import { createRequire } from 'node:module';
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import PgBoss from 'pg-boss';
import { retryableStoreFailure } from '../db/errors.ts';
import type { Database } from '../db/schema.ts';
import type { Store } from '../db/store.ts';
import { organisationIndexSql, startSharedWorker, type FetchedJob, type SharedWorker, type SharedWorkOptions } from './shared-work.ts';

export type { ForOrganisation } from './shared-work.ts';

// The job queue (D11 "Workers"): pg-boss over the store, on PostgreSQL and on the embedded PGlite
// alike. pg-boss talks to the database only through `executeSql(text, values)`, so it gets an
// adapter over our own Kysely instance rather than a pool of its own:
// - with values: one parameterised statement through Kysely (on PGlite this waits its turn on the
//   one serialised session, like every other query);
// - without values: a script (pg-boss's schema and its migrations are multi-statement) through the
//   store's session runner.
// A job sent with `trx` is written by that transaction, so it exists exactly when the transaction
// commits (the welcome emails of a create, the records of a started migration job). Never use the
// outer `db` inside a transaction: on PGlite it waits for the session the transaction holds.

/** `retryLimit` is the job's own (set when it was sent), not this instance's configuration. */
export type JobHandler<T> = (job: { id: string; data: T; retryCount: number; retryLimit: number }) => Promise<void>;
/** A whole batch's data at once; if it throws, every job of the batch fails (and is retried by its policy). */
export type BatchHandler<T> = (batch: T[]) => Promise<void>;

export interface SendOptions {
  /** Write the job in this transaction. */
  trx?: Transaction<Database> | undefined;
  /** The job's id (a UUID): a second send with the same id, while the first is kept, is dropped. */
  id?: string | undefined;
  startAfter?: Date | number | undefined;
  singletonKey?: string | undefined;
  retryLimit?: number | undefined;
  retryDelay?: number | undefined;
  retryBackoff?: boolean | undefined;
  expireInSeconds?: number | undefined;
  priority?: number | undefined;
  /** A job that fails for good (retries used up, or expired) is copied to this queue. */
  deadLetter?: string | undefined;
}

export interface WorkOptions {
  /** How many jobs of this queue this instance runs at once. */
  concurrency: number;
  /** How often an idle worker looks for work (pg-boss's minimum is 0.5 s). */
  pollingIntervalSeconds?: number;
  /**
   * Jobs one fetch takes (default 1). They run at once, and `concurrency` stays the number of jobs in
   * hand: ceil(concurrency / batchSize) workers each fetch, run and complete a batch together, which
   * saves the queue's fetch and complete statements per job. Each job still succeeds or fails (and is
   * retried) on its own; the failed jobs of one batch are recorded with the first failure's error.
   */
  batchSize?: number;
  /**
   * The instance's workers of the queue are shared out between the organisations the jobs are for
   * (named in their data: ForOrganisation), in turn and at most half each while another waits (shared-work.ts).
   */
  shared?: boolean;
}

export interface QueueOptions {
  /** How often pg-boss's maintenance (expiring stuck jobs, archiving) runs; seconds. */
  maintenanceIntervalSeconds?: number;
  onError?: (error: Error) => void;
}

export interface JobQueue {
  readonly boss: PgBoss;
  start(): Promise<void>;
  /** Stops fetching, waits (up to timeoutMs) for the jobs in hand, then returns. */
  stop(timeoutMs?: number): Promise<void>;
  /** Creates the queue if it does not exist (pg-boss 10 needs a queue before send or work). */
  define(name: string, policy?: { retryLimit?: number; retryDelay?: number; retryBackoff?: boolean; expireInSeconds?: number; deadLetter?: string }): Promise<void>;
  send<T extends object>(name: string, data: T, options?: SendOptions): Promise<string | null>;
  sendMany<T extends object>(name: string, items: T[], options?: Omit<SendOptions, 'startAfter' | 'singletonKey'> & { trx?: Transaction<Database> }): Promise<void>;
  /** Starts `concurrency` workers for the queue on this instance; returns the queue name for offWork. */
  work<T>(name: string, options: WorkOptions, handler: JobHandler<T>): Promise<string>;
  /**
   * As work, with `batchSize` jobs a fetch handed to one call together: for jobs whose store work is
   * best done once per batch (webhook deliveries). The batch succeeds or fails as one.
   */
  workBatches<T>(name: string, options: WorkOptions & { batchSize: number }, handler: BatchHandler<T>): Promise<string>;
  /** Stops this instance's workers of the queue and waits (up to timeoutMs) for their jobs in hand. */
  offWork(name: string, timeoutMs?: number): Promise<void>;
  schedule(name: string, cron: string, data?: object): Promise<void>;
  /**
   * Takes up to `max` jobs of the queue that are ready now and completes them unrun: for jobs whose
   * work the caller's own run covers (queued fan-outs). Returns how many.
   */
  completeReady(name: string, max: number): Promise<number>;
  /**
   * Is a job of the queue waiting to be fetched (created or to be retried, whenever it starts)?
   * Read with the executor's own snapshot, so inside a transaction it sees what that transaction sees.
   */
  hasWaiting(name: string, db: Kysely<Database> | Transaction<Database>): Promise<boolean>;
}

export const QUEUE_SCHEMA = 'pgboss';
// Any constant, the same in every instance (migrate.ts uses another).
const QUEUE_INSTALL_LOCK_KEY = 727_100_002;

/**
 * How the queue's own session (not a transaction's) runs: scripts on a session of the store, and what
 * to do with a statement that fails once the queue has stopped.
 */
interface OwnSession {
  runScript: Store['withSession'];
  /** Has the queue been stopped (its workers given up)? */
  stopped: () => boolean;
  onError: (error: Error) => void;
}

function adapterFor(db: Kysely<Database> | Transaction<Database>, own?: OwnSession): PgBoss.Db {
  const runScript = own?.runScript;
  return {
    async executeSql(text: string, values?: unknown[]) {
      if ((values === undefined || values.length === 0) && runScript) {
        // A script that fails half-way (pg-boss's schema race between instances starting together)
        // must not hand its session back inside an aborted transaction.
        const rows = await runScript(async (run) => {
          try {
            return await run(text);
          } catch (error) {
            await run('ROLLBACK').catch(() => undefined);
            throw error;
          }
        });
        return { rows };
      }
      const run = async () => (await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, values ?? []))).rows;
      // Outside a transaction, a statement that finds the store away, or that the store rolled back to
      // settle a conflict with other work (a deadlock), is tried again for a while: pg-boss does not
      // await some of its calls (a worker's complete/fail), and a rejection there would be unhandled
      // and end the process. Inside a transaction there is nothing to retry: the transaction is lost.
      if (own === undefined) return { rows: await run() };
      for (let attempt = 1; ; attempt += 1) {
        try {
          return { rows: await run() };
        } catch (error) {
          // A job that outlives the queue's stop (its handler still running when the stop's wait ran
          // out) was already failed by the stop, to be run again; when its handler ends, pg-boss
          // completes (or fails) it without awaiting, by then often on a closed store, and a rejection
          // there would be unhandled. Losing that one statement is what a killed process does too: it
          // is reported and answered as having changed no job. Any other statement fails as it did.
          if (own.stopped() && UNAWAITED_COMMANDS.has(text)) {
            own.onError(new Error(`a job's completion or failure after the queue stopped was not written (it runs again): ${(error as Error).message}`));
            return { rows: [{ count: 0 }] };
          }
          if (!retryableStoreFailure(error) || attempt >= STORE_RETRY_ATTEMPTS) throw error;
          await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** attempt)));
        }
      }
    },
  } as PgBoss.Db;
}

/**
 * The statements pg-boss's workers send without awaiting them: a fetched job's completion and its
 * failure (its own plans, for our schema; pg-boss reads their answer as a count of jobs changed).
 */
const pgBossPlans = createRequire(import.meta.url)('pg-boss/src/plans.js') as { completeJobs(schema: string): string; failJobsById(schema: string): string };
const UNAWAITED_COMMANDS = new Set([pgBossPlans.completeJobs(QUEUE_SCHEMA), pgBossPlans.failJobsById(QUEUE_SCHEMA)]);

/** About a minute of retries (100 ms doubling, at most 5 s apart) before a queue statement gives up. */
const STORE_RETRY_ATTEMPTS = 16;

export function createJobQueue(store: Store, options: QueueOptions = {}): JobQueue {
  let stopped = false;
  const boss = new PgBoss({
    db: adapterFor(store.db, {
      runScript: store.withSession.bind(store),
      stopped: () => stopped,
      onError: (error) => options.onError?.(error),
    }),
    schema: QUEUE_SCHEMA,
    maintenanceIntervalSeconds: options.maintenanceIntervalSeconds ?? 60,
  });
  boss.on('error', (error) => options.onError?.(error as Error));
  // pg-boss installs its schema when it finds none, and creates a queue's partition when asked: two
  // processes doing either at once on one PostgreSQL race (CREATE SCHEMA past pg-boss's own lock, a
  // deadlock between two create_queue calls). One session holds an advisory lock while this process
  // does it on the pool's other sessions, so a second instance waits, then finds the work done.
  // PGlite has one session and one process: nothing to race with, and holding its only session
  // would block the work itself.
  async function installing(work: () => Promise<unknown>): Promise<void> {
    if (store.kind === 'pglite') return void await work();
    await store.withSession(async (run) => {
      await run(`SELECT pg_advisory_lock(${QUEUE_INSTALL_LOCK_KEY})`);
      try {
        await work();
      } finally {
        await run(`SELECT pg_advisory_unlock(${QUEUE_INSTALL_LOCK_KEY})`).catch(() => undefined);
      }
    });
  }
  const defined = new Set<string>();
  const inFlight = new Map<string, number>();
  const shared = new Map<string, SharedWorker>();
  const settled = async (name: string, until: number) => {
    while ((inFlight.get(name) ?? 0) > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
  };
  const held = (name: string, jobs: number) => inFlight.set(name, (inFlight.get(name) ?? 0) + jobs);
  type Fetched<T> = { id: string; data: T; retryCount: number; retryLimit: number };
  /** pg-boss's work() for one worker of `batchSize` jobs, with or without the jobs' metadata (its overloads differ). */
  type StartWorker<J> = (options: { batchSize: number; pollingIntervalSeconds: number }, handler: (jobs: J[]) => Promise<void>) => Promise<string>;
  /**
   * pg-boss 10 hands a worker one batch at a time: `concurrency` jobs are split into workers of `size`,
   * the last taking what is left, so no more than `concurrency` jobs are ever in hand.
   */
  async function startWorkers<J>(
    concurrency: number, size: number, pollingIntervalSeconds: number, start: StartWorker<J>, onBatch: (jobs: J[]) => Promise<void>,
  ): Promise<void> {
    for (let taken = 0; taken < concurrency; taken += size) {
      const batch = Math.min(size, concurrency - taken);
      let workerId: string | undefined;
      // eslint-disable-next-line prefer-const -- the handler may run before work() resolves: a const would still be in its TDZ
      workerId = await start({ batchSize: batch, pollingIntervalSeconds }, async (jobs) => {
        try {
          await onBatch(jobs);
        } finally {
          // A worker that found a job looks for the next one at once: pg-boss would otherwise wait
          // out the polling interval after every job, whatever is queued (2 jobs a second at 0.5 s).
          // Only a fetch that finds nothing waits for the interval.
          if (workerId && jobs.length > 0) boss.notifyWorker(workerId);
        }
      });
    }
  }

  /** Starts the instance's one shared fetch loop for the queue (shared-work.ts). */
  function shareOut<T>(name: string, work: Omit<SharedWorkOptions, 'name'>, run: (jobs: Array<FetchedJob<T>>) => Promise<void>): void {
    shared.set(name, startSharedWorker<T>(boss, store.db, QUEUE_SCHEMA, { name, ...work }, run, (error) => options.onError?.(error)));
  }

  const queue: JobQueue = {
    boss,
    async start() {
      stopped = false;
      await installing(async () => {
        await boss.start();
        await store.withSession(async (run) => {
          for (const statement of organisationIndexSql(QUEUE_SCHEMA)) await run(statement);
        });
      });
    },
    async stop(timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      for (const worker of shared.values()) worker.stop();
      await Promise.all([...shared.keys()].map((name) => settled(name, until)));
      shared.clear();
      await boss.stop({ graceful: true, wait: true, close: false, timeout: Math.max(1000, timeoutMs) });
      stopped = true;
    },
    async define(name, policy = {}) {
      if (defined.has(name)) return;
      await installing(async () => {
        if (!(await boss.getQueue(name))) await boss.createQueue(name, { name, ...policy });
      });
      defined.add(name);
    },
    async send(name, data, { trx, id, startAfter, singletonKey, retryLimit, retryDelay, retryBackoff, expireInSeconds, priority, deadLetter } = {}) {
      const sendOptions: PgBoss.SendOptions = {};
      if (trx) sendOptions.db = adapterFor(trx);
      if (id !== undefined) sendOptions.id = id;
      if (startAfter !== undefined) sendOptions.startAfter = startAfter;
      if (singletonKey !== undefined) sendOptions.singletonKey = singletonKey;
      if (retryLimit !== undefined) sendOptions.retryLimit = retryLimit;
      if (retryDelay !== undefined) sendOptions.retryDelay = retryDelay;
      if (retryBackoff !== undefined) sendOptions.retryBackoff = retryBackoff;
      if (expireInSeconds !== undefined) sendOptions.expireInSeconds = expireInSeconds;
      if (priority !== undefined) sendOptions.priority = priority;
      if (deadLetter !== undefined) sendOptions.deadLetter = deadLetter;
      return boss.send(name, data, sendOptions);
    },
    async sendMany(name, items, { trx, ...rest } = {}) {
      if (items.length === 0) return;
      const jobs: PgBoss.JobInsert[] = items.map((data) => ({
        name, data,
        ...(rest.retryLimit !== undefined ? { retryLimit: rest.retryLimit } : {}),
        ...(rest.retryDelay !== undefined ? { retryDelay: rest.retryDelay } : {}),
        ...(rest.retryBackoff !== undefined ? { retryBackoff: rest.retryBackoff } : {}),
        ...(rest.expireInSeconds !== undefined ? { expireInSeconds: rest.expireInSeconds } : {}),
        ...(rest.priority !== undefined ? { priority: rest.priority } : {}),
        ...(rest.deadLetter !== undefined ? { deadLetter: rest.deadLetter } : {}),
      }));
      await boss.insert(jobs, trx ? { db: adapterFor(trx) } : {});
    },
    async work<T>(name: string, { concurrency, pollingIntervalSeconds = 1, batchSize = 1, shared: fairShares = false }: WorkOptions, handler: JobHandler<T>) {
      const size = Math.max(1, Math.min(batchSize, concurrency));
      const run = async (job: Fetched<T>) => {
        held(name, 1);
        try {
          await store.background(() => handler({ id: job.id, data: job.data, retryCount: job.retryCount, retryLimit: job.retryLimit }));
        } finally {
          held(name, -1);
        }
      };
      if (fairShares) {
        shareOut<T>(name, { concurrency, batchSize: size, pollingIntervalSeconds, together: false }, (jobs) => run(jobs[0]!));
        return name;
      }
      const withMetadata: StartWorker<Fetched<T>> = (options, onJobs) => boss.work<T>(name, { ...options, includeMetadata: true }, onJobs);
      await startWorkers(concurrency, size, pollingIntervalSeconds, withMetadata, async (jobs) => {
        if (jobs.length <= 1) {
          if (jobs[0]) await run(jobs[0]);
          return;
        }
        // When the handler returns, pg-boss completes every job of the batch that is still active,
        // without awaiting it; when it throws, it fails them. A job failed here, with a retry due at
        // once, could be fetched again (by another worker, or by this one woken below) before that
        // completion runs, and then be completed unrun. So the jobs that succeeded are completed
        // here, and a batch with a failure throws: pg-boss fails the jobs still active, which are
        // exactly the failed ones (each retried or dead-lettered by its policy), with the first
        // failure's error.
        const failures: unknown[] = [];
        const succeeded: string[] = [];
        await Promise.all(jobs.map(async (job) => {
          try {
            await run(job);
            succeeded.push(job.id);
          } catch (error) {
            failures.push(error);
          }
        }));
        if (failures.length === 0) return;
        if (succeeded.length > 0) await boss.complete(name, succeeded);
        throw failures[0];
      });
      return name;
    },
    async workBatches<T>(name: string, { concurrency, pollingIntervalSeconds = 1, batchSize, shared: fairShares = false }: WorkOptions & { batchSize: number }, handler: BatchHandler<T>) {
      const size = Math.max(1, Math.min(batchSize, concurrency));
      const runBatch = async (jobs: Array<{ data: T }>) => {
        held(name, jobs.length);
        try {
          await store.background(() => handler(jobs.map((job) => job.data)));
        } finally {
          held(name, -jobs.length);
        }
      };
      if (fairShares) {
        shareOut<T>(name, { concurrency, batchSize: size, pollingIntervalSeconds, together: true }, runBatch);
        return name;
      }
      // A batch handler is given the jobs' data only: pg-boss's other columns (a dozen, half of them
      // timestamps to parse) are not fetched.
      const dataOnly: StartWorker<PgBoss.Job<T>> = (options, onJobs) => boss.work<T>(name, options, onJobs);
      await startWorkers(concurrency, size, pollingIntervalSeconds, dataOnly, runBatch);
      return name;
    },
    async offWork(name, timeoutMs = 10_000) {
      shared.get(name)?.stop();
      shared.delete(name);
      await boss.offWork(name);
      await settled(name, Date.now() + timeoutMs);
    },
    async schedule(name, cron, data = {}) {
      await boss.schedule(name, cron, data, { tz: 'UTC' });
    },
    async completeReady(name, max) {
      const jobs = await boss.fetch(name, { batchSize: max });
      if (!jobs || jobs.length === 0) return 0;
      await boss.complete(name, jobs.map((job) => job.id));
      return jobs.length;
    },
    async hasWaiting(name, db) {
      // pg-boss's own getQueueSize condition (state before 'active'), on its partial index job_i5,
      // stopping at the first row; getQueueSize itself cannot run inside our transaction.
      const { rows } = await db.executeQuery(CompiledQuery.raw(
        `SELECT 1 FROM ${QUEUE_SCHEMA}.job WHERE name = $1 AND state < 'active' LIMIT 1`, [name]));
      return rows.length > 0;
    },
  };
  return queue;
}
