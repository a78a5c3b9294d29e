import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { prepareMarkedStatements } from './server-prepared.ts';
import { readSliced, type SliceRead } from './sliced-read.ts';
import { listenPostgres, type ChannelHandlers, type Unlisten } from './listener.ts';
import { inBackground, PGliteDialect } from './pglite-dialect.ts';
import type { Database } from './schema.ts';
import { typeParsers } from './type-parsers.ts';

export type StoreKind = 'pglite' | 'postgres';

/**
 * The store: one Kysely instance over either a PostgreSQL server or an embedded PGlite. Everything
 * above this module is the same for both. `withSession` hands out one database session that runs
 * multi-statement SQL scripts (migrations, session advisory locks); `db` is for everything else.
 */
export type RunScript = <T = Record<string, unknown>>(script: string) => Promise<T[]>;

export interface Store {
  readonly kind: StoreKind;
  readonly db: Kysely<Database>;
  withSession<T>(work: (run: RunScript) => Promise<T>): Promise<T>;
  /**
   * Subscribes to a NOTIFY channel. On PostgreSQL, over a session of its own that is re-established
   * when lost (the handlers are told); PGlite is in this process and never loses it.
   */
  listen(channel: string, handlers: ChannelHandlers): Promise<Unlisten>;
  /**
   * A long read in `slices` (sliced-read.ts), its results in slice order. On PostgreSQL the slices run
   * at the same time, each on a connection of its own, all in one snapshot, while sliced reads hold at
   * most half the pool; past that, and on PGlite, one after another in one transaction.
   */
  readInSlices<T>(slices: number, read: SliceRead<T>): Promise<T[]>;
  /**
   * Runs work that no one is waiting on (the job queue's handlers). On PGlite, whose one session is
   * taken in turns, its turns come after those of requests waiting meanwhile (pglite-dialect.ts); on
   * PostgreSQL each has a connection of its own and nothing changes.
   */
  background<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface StoreOptions {
  databaseUrl?: string | undefined;
  /** PGlite data directory; `memory://` keeps it in memory (tests). */
  dataDir?: string;
  /**
   * PGlite only: a data directory to start from (a tar made by PGlite's `dumpDataDir`) in place of an
   * empty one. The tests start each in-memory store from one made once, which skips PostgreSQL's
   * initdb (seconds of CPU a store).
   */
  initialData?: Blob;
  poolSize?: number;
  /** Session limits on PostgreSQL (ms; 0 turns one off). Defaults: SESSION_LIMIT_DEFAULTS. */
  sessionLimits?: Partial<SessionLimits>;
}

/**
 * What bounds a session this process holds, so that a frozen or partitioned instance cannot keep
 * locks, concurrency slots or an IN_PROGRESS create forever: PostgreSQL ends a session idle inside a
 * transaction after `idleInTransactionMs` (rolling it back, which frees its advisory locks and row
 * locks), cancels a statement running past `statementMs`, and TCP keepalives probe a silent peer.
 */
export interface SessionLimits { idleInTransactionMs: number; statementMs: number; keepAliveInitialDelayMs: number }
export function sessionLimitsOf(config: { dbIdleInTransactionTimeoutMs: number; dbStatementTimeoutMs: number; dbKeepAliveDelayMs: number }): SessionLimits {
  return { idleInTransactionMs: config.dbIdleInTransactionTimeoutMs, statementMs: config.dbStatementTimeoutMs, keepAliveInitialDelayMs: config.dbKeepAliveDelayMs };
}
export const SESSION_LIMIT_DEFAULTS: SessionLimits = { idleInTransactionMs: 30_000, statementMs: 60_000, keepAliveInitialDelayMs: 10_000 };

export async function openStore(options: StoreOptions): Promise<Store> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 20, { ...SESSION_LIMIT_DEFAULTS, ...options.sessionLimits }) : openPGlite(options.dataDir ?? './data', options.initialData);
}

async function openPostgres(url: string, poolSize: number, limits: SessionLimits): Promise<Store> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    keepAlive: true,
    keepAliveInitialDelayMillis: limits.keepAliveInitialDelayMs,
    options: `-c idle_in_transaction_session_timeout=${limits.idleInTransactionMs} -c statement_timeout=${limits.statementMs}`,
    connectionTimeoutMillis: 5_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        typeParsers[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its server (a restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  // Likewise for a checked-out client whose session is terminated mid-query: the query's promise
  // rejects (and becomes a 503), but the client's own 'error' event must not crash the process.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    prepareMarkedStatements(client);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  // Connections lent to sliced reads now: bounded, so that reads waiting for their next connection
  // while holding one can never take the whole pool.
  let lentToSlices = 0;
  return {
    kind: 'postgres',
    db,
    async readInSlices(slices, read) {
      const concurrent = lentToSlices + slices <= Math.floor(poolSize / 2);
      if (concurrent) lentToSlices += slices;
      try {
        return await readSliced(db, slices, concurrent, read);
      } finally {
        if (concurrent) lentToSlices -= slices;
      }
    },
    async withSession(work) {
      const client = await pool.connect();
      try {
        return await work(async <T>(script: string) => {
          const result = (await client.query(script)) as unknown as pg.QueryResult | pg.QueryResult[];
          const last = Array.isArray(result) ? result[result.length - 1] : result;
          return (last?.rows ?? []) as T[];
        });
      } finally {
        client.release();
      }
    },
    listen: (channel, handlers) => listenPostgres(url, channel, handlers, limits.keepAliveInitialDelayMs),
    background: (work) => work(),
    close: () => db.destroy(),
  };
}

/** Runs a script of one or more statements on a PGlite session; answers the last statement's rows. */
export function pgliteScript(client: PGlite): RunScript {
  return async <T>(script: string) => {
    const results = await client.exec(script);
    return (results[results.length - 1]?.rows ?? []) as T[];
  };
}

async function openPGlite(dataDir: string, initialData: Blob | undefined): Promise<Store> {
  const client = await PGlite.create(dataDir, { parsers: typeParsers, ...(initialData && { loadDataDir: initialData }) });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
  return {
    kind: 'pglite',
    db,
    readInSlices: (slices, read) => readSliced(db, slices, false, read),
    background: inBackground,
    // Through Kysely's connection so the script waits its turn on PGlite's one session.
    async withSession(work) {
      return db.connection().execute(() => work(pgliteScript(client)));
    },
    // LISTEN waits its turn on the one session too: run in the middle of another caller's
    // transaction, it would take effect (or be lost) with that transaction.
    async listen(channel, handlers) {
      const unlisten = await db.connection().execute(() => client.listen(channel, handlers.notice));
      handlers.connected(true);
      return () => db.connection().execute(() => unlisten());
    },
    close: () => db.destroy(),
  };
}
