import {
  CompiledQuery, DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type Compilable,
} from 'kysely';
import type { Database } from './schema.ts';
import { SERVER_PREPARED } from './server-prepared.ts';

// A query for a hot path, written once with the Kysely builder and compiled once: each call only
// fills in its parameters. Building and compiling a query allocates a tree of frozen nodes and walks
// it, which for a small polled query costs more CPU than the rest of the request's own code (the
// status endpoint: 13% of the service's busy time in kysely, docs/performance.md).
//
// The builder is called once with a marker in place of each argument; in the compiled parameters each
// marker is then replaced by its argument at every call, and every other parameter (constants the
// query itself holds) is kept. A marker must reach the parameters as it was given, so the builder
// may pass arguments into the query but not compute with them: that is checked once, at definition.

export type Executor = Pick<Kysely<Database>, 'executeQuery'>;

interface Marker { readonly argument: number }

/** Builds and compiles queries only (PostgreSQL's SQL, as both stores speak it); never connects. */
const builder = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

/**
 * `serverPrepared`: also sent as a server-prepared statement (server-prepared.ts says which
 * statements may be), so that PostgreSQL does not plan it at every call either.
 */
export function precompiled<A extends unknown[], R>(
  arity: A['length'], build: (qb: Kysely<Database>, ...args: A) => Compilable<R>, options: { serverPrepared?: boolean } = {},
): (db: Executor, ...args: A) => Promise<R[]> {
  const markers: Marker[] = Array.from({ length: arity }, (_, argument) => Object.freeze({ argument }));
  const compiled = build(builder, ...(markers as unknown as A)).compile();
  const text = options.serverPrepared ? SERVER_PREPARED + compiled.sql : compiled.sql;
  const { parameters } = compiled;
  const slots = parameters.map((value) => (markers.includes(value as Marker) ? (value as Marker).argument : -1));
  for (const marker of markers) {
    if (!slots.includes(marker.argument)) throw new Error(`precompiled: argument ${marker.argument} does not reach the query as a parameter`);
  }
  return async (db, ...args) => {
    const values = slots.map((slot, i) => (slot === -1 ? parameters[i] : args[slot]));
    return (await db.executeQuery<R>(CompiledQuery.raw(text, values))).rows;
  };
}
