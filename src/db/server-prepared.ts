import type pg from 'pg';

// Server-side prepared statements, for the few statements whose planning costs more than running
// them. A statement is sent as an unnamed one by default: PostgreSQL parses and plans it at every
// call. A statement whose text starts with SERVER_PREPARED is prepared once per connection (a named
// statement) and afterwards only bound and executed; PostgreSQL re-plans it for its first five runs,
// then keeps a generic plan when that costs no more than the values' own plans.
//
// Only for statements whose plan cannot depend on their values, such as inserts of rows sent as
// jsonb (the account tree's: planning it took 0.77 ms of PostgreSQL's CPU for every create, more
// than writing it). A lookup in a table that grows is not one: its generic plan is made while the
// table is small and kept while it grows. The statement must name the columns it returns (no
// `RETURNING *`), so that a column added by a later migration leaves its result as it was.
//
// A lookup's generic plan, for one: made while `accounts` was empty, the account lock's used the
// supplier's index and filtered on the number (docs/performance.md). On PGlite the mark is only a
// comment (its dialect sends every statement as it is), and the statement is planned at every call.

export const SERVER_PREPARED = '/* server-prepared */';

/** Distinct marked texts one connection prepares; past it they are sent unnamed (never an error). */
export const MAX_PER_CONNECTION = 64;

type Query = (...args: unknown[]) => unknown;

/** Makes `client` send the marked statements (as Kysely's driver sends them: text and values) named. */
export function prepareMarkedStatements(client: pg.ClientBase): void {
  const names = new Map<string, string>();
  const query = client.query.bind(client) as Query;
  (client as unknown as { query: Query }).query = (config: unknown, values?: unknown, callback?: unknown) => {
    if (typeof config === 'string' && config.startsWith(SERVER_PREPARED) && Array.isArray(values) && callback === undefined) {
      let name = names.get(config);
      if (name === undefined && names.size < MAX_PER_CONNECTION) names.set(config, name = `server_prepared_${names.size}`);
      if (name !== undefined) return query({ name, text: config, values });
    }
    return query(config, values, callback);
  };
}
