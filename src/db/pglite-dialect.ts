import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler,
  type DatabaseConnection, type Dialect, type Driver, type Kysely, type QueryResult, type TransactionSettings,
} from 'kysely';
import { AsyncLocalStorage } from 'node:async_hooks';

// PGlite has one connection. Kysely's transactions hold a connection across awaits, so without
// serialisation two concurrent transactions would interleave their statements on that one session.
// This driver hands the connection to one user at a time, in turns, with two lanes:
// - work run through `inBackground` (the job queue's handlers: migration records, deliveries, the
//   vacuum) waits in the background lane, everything else (requests, pg-boss's own fetches) in the
//   foreground one, which goes first: a request waits for the turn in progress, not for every
//   worker's queued transaction;
// - so that a steady stream of requests cannot stop the jobs, requests go first for at most
//   FOREGROUND_WINDOW_MS after a background turn ended; then the next background turn goes.
// What this trades, measured: bench/findings.md ("requests before background work on PGlite").
const FOREGROUND_WINDOW_MS = 50;
const background = new AsyncLocalStorage<true>();

/** Runs `work` with its turns at PGlite's session behind requests' (see above). */
export function inBackground<T>(work: () => Promise<T>): Promise<T> {
  return background.run(true, work);
}

class Turns {
  readonly #foreground: Array<() => void> = [];
  readonly #background: Array<() => void> = [];
  #held: 'foreground' | 'background' | null = null;
  #backgroundEndedAt = 0;

  take(): Promise<void> {
    const lane = background.getStore() ? 'background' : 'foreground';
    if (this.#held === null) {
      this.#held = lane;
      return Promise.resolve();
    }
    return new Promise<void>((go) => (lane === 'background' ? this.#background : this.#foreground).push(() => {
      this.#held = lane;
      go();
    }));
  }

  /**
   * The next turn is handed out after a trip round the event loop: PGlite answers through promises
   * alone, so handing it over at once would run the queued turns back to back without the loop
   * ever reaching its I/O phase, and a request that arrived meanwhile would not even be read, let
   * alone queued ahead of them.
   */
  release(): void {
    if (this.#held === 'background') this.#backgroundEndedAt = performance.now();
    setImmediate(() => {
      const backgroundDue = this.#foreground.length === 0 || performance.now() - this.#backgroundEndedAt >= FOREGROUND_WINDOW_MS;
      const next = (backgroundDue ? this.#background.shift() : undefined) ?? this.#foreground.shift() ?? this.#background.shift();
      this.#held = null;
      next?.();
    });
  }
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly client: PGlite) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.client.query<R>(query.sql, [...query.parameters]);
    const affected = result.affectedRows;
    return {
      rows: result.rows,
      ...(affected !== undefined && query.query.kind !== 'SelectQueryNode' ? { numAffectedRows: BigInt(affected) } : {}),
    };
  }

  // eslint-disable-next-line require-yield -- Kysely's Driver must offer streaming; this one only refuses it
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used: lists page by keyset instead');
  }
}

class PGliteDriver implements Driver {
  readonly #turns = new Turns();
  readonly #released = new WeakSet<DatabaseConnection>();

  constructor(private readonly client: PGlite) {}

  async init(): Promise<void> { await this.client.waitReady; }

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#turns.take();
    // A fresh wrapper per acquisition so each holder releases only its own turn, once.
    return new PGliteConnection(this.client);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    if (this.#released.has(connection)) return;
    this.#released.add(connection);
    this.#turns.release();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    await connection.executeQuery(CompiledQuery.raw(`begin${isolation}`));
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }
  async destroy(): Promise<void> {
    if (!this.client.closed) await this.client.close();
  }
}

export class PGliteDialect implements Dialect {
  constructor(private readonly client: PGlite) {}
  createAdapter() { return new PostgresAdapter(); }
  createDriver(): Driver { return new PGliteDriver(this.client); }
  createQueryCompiler() { return new PostgresQueryCompiler(); }
  createIntrospector(db: Kysely<unknown>) { return new PostgresIntrospector(db); }
}
