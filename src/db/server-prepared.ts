import type pg from 'pg';

// Server-side prepared statements, for the statements of the hot paths (a migration job's record
// runs some twenty) whose planning costs PostgreSQL as much as running them. A statement is sent as
// an unnamed one by default: PostgreSQL parses and plans it at every call. A statement whose text
// starts with SERVER_PREPARED is prepared once per connection (a named statement) and afterwards
// only bound and executed; PostgreSQL re-plans it for its first five runs, then keeps a generic plan
// (one made without the values) when that costs no more than the values' own plans.
//
// So a statement may be marked only when its generic plan cannot go wrong whatever the values and
// the table's size:
// - writes whose plan does not depend on their values, such as inserts of rows sent as jsonb (the
//   account tree's: planning it took 0.77 ms of PostgreSQL's CPU for every create, more than
//   writing it);
// - lookups whose WHERE pins a whole unique key (a primary key, `accounts.id`, `(job_id, line)`,
//   the account lock's `(supplier_id, external_account_number)`) or leads an index with the key every
//   row is read by (`account_id` of the account's own rows).
// Not a lookup that a second index could also serve at the same estimated cost. The account lock
// was one until migration 016 dropped `accounts_supplier_created_idx`: on an empty `accounts` its
// generic plan tied between the unique key and that index filtered on the number, and the plan made
// then took 0.59 ms a lock instead of 0.03, more the bigger the book.
// test/http/prepared-plans.test.ts checks the generic plan of every statement a migration job
// prepares, on a fresh database and on a filled, analysed one.
// A marked statement names the columns it returns (no `*`): a column added by a later migration
// must leave its result as it was, or a prepared statement's plan would change result type. A query
// built with Kysely is marked with `precompiled(…, { serverPrepared: true })` (precompiled.ts).
// On PGlite the mark is only a comment (its dialect sends every statement as it is).

export const SERVER_PREPARED = '/* server-prepared */';

/** Distinct marked texts one connection prepares; past it they are sent unnamed (never an error). */
export const MAX_PER_CONNECTION = 64;

/** The distinct marked texts this process has prepared (the first 256), for the plan check. */
const preparedTexts = new Set<string>();
const TEXTS_KEPT = 256;
export function preparedStatementTexts(): readonly string[] {
  return [...preparedTexts];
}

type Query = (...args: unknown[]) => unknown;

/** Makes `client` send the marked statements (as Kysely's driver sends them: text and values) named. */
export function prepareMarkedStatements(client: pg.ClientBase): void {
  const names = new Map<string, string>();
  const query = client.query.bind(client) as Query;
  (client as unknown as { query: Query }).query = (config: unknown, values?: unknown, callback?: unknown) => {
    if (typeof config === 'string' && config.startsWith(SERVER_PREPARED) && Array.isArray(values) && callback === undefined) {
      let name = names.get(config);
      if (name === undefined && names.size < MAX_PER_CONNECTION) {
        names.set(config, name = `server_prepared_${names.size}`);
        if (preparedTexts.size < TEXTS_KEPT) preparedTexts.add(config);
      }
      if (name !== undefined) return query({ name, text: config, values });
    }
    return query(config, values, callback);
  };
}
