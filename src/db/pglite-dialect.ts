import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler,
  type DatabaseConnection, type Dialect, type Driver, type Kysely, type QueryResult, type TransactionSettings,
} from 'kysely';

// PGlite has one connection. Kysely's transactions hold a connection across awaits, so without
// serialisation two concurrent transactions would interleave their statements on that one session.
// This driver hands the connection to one user at a time, in arrival order.
class Mutex {
  #tail: Promise<void> = Promise.resolve();
  lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => { release = resolve; });
    const acquired = this.#tail.then(() => release);
    this.#tail = this.#tail.then(() => next);
    return acquired;
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
  readonly #mutex = new Mutex();
  readonly #releases = new WeakMap<DatabaseConnection, () => void>();

  constructor(private readonly client: PGlite) {}

  async init(): Promise<void> { await this.client.waitReady; }

  async acquireConnection(): Promise<DatabaseConnection> {
    // PGlite answers through promises alone (microtasks): queue workers running back to back would
    // never let the event loop reach its I/O phase, and no HTTP request would even be read until
    // they paused. Every turn at the store therefore starts with a trip round the event loop.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const release = await this.#mutex.lock();
    // A fresh wrapper per acquisition so each holder releases only its own turn.
    const connection = new PGliteConnection(this.client);
    this.#releases.set(connection, release);
    return connection;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.#releases.get(connection)?.();
    this.#releases.delete(connection);
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
