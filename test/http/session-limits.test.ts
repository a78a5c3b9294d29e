import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { isStoreUnavailable } from '../../src/db/errors.ts';
import { openStore } from '../../src/db/store.ts';
import { PG_ONLY } from '../support/imports.ts';

// Sessions the service holds are bounded (issue #14): a session left idle inside a transaction (an
// instance frozen mid-create) is ended by PostgreSQL after DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, which
// rolls it back and frees its locks, so another instance can take them.
describe('PostgreSQL session limits', { skip: PG_ONLY }, () => {
  test('defaults: 30 s idle in transaction, 60 s per statement', async () => {
    const store = await openStore({ databaseUrl: process.env.DATABASE_URL, poolSize: 1 });
    after(() => store.close());
    const { rows } = await sql<{ idle: string; statement: string }>`
      SELECT current_setting('idle_in_transaction_session_timeout') AS idle, current_setting('statement_timeout') AS statement`.execute(store.db);
    assert.deepEqual(rows, [{ idle: '30s', statement: '1min' }]);
  });

  test('a session idle in a transaction holding a lock is ended within the bound, and the lock is free', async () => {
    const frozen = await openStore({ databaseUrl: process.env.DATABASE_URL, poolSize: 1, sessionLimits: { idleInTransactionMs: 500 } });
    const other = await openStore({ databaseUrl: process.env.DATABASE_URL, poolSize: 1 });
    after(async () => { await frozen.close().catch(() => {}); await other.close(); });
    const key = 0x7e570000 + (process.pid % 0xffff);
    const started = Date.now();
    const result = await frozen.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${key}::int8)`.execute(trx);
      const held = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${key}::int8) AS locked`.execute(other.db);
      assert.equal(held.rows[0]!.locked, false, 'held while the transaction is alive');
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // "frozen" inside the transaction
      return sql`SELECT 1`.execute(trx);
    }).then(() => 'committed', (error: Error) => error.message);
    assert.match(result, /idle-in-transaction timeout|terminat|connection error/i);
    const free = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${key}::int8) AS locked`.execute(other.db);
    assert.equal(free.rows[0]!.locked, true, 'the lock was released with the session');
    assert.ok(Date.now() - started < 5_000);
  });

  // A frozen process (SIGSTOP) does not read its socket: when it resumes, it sends its next
  // statement before reading the server's goodbye, which then arrives as that statement's error,
  // with the SQLSTATE of the timeout. It must be answered as a lost store (503, retried), not as an
  // unexpected error (500): the transaction was rolled back with the session.
  test('the statement a frozen process sends when it resumes fails as a lost store', async () => {
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL, options: '-c idle_in_transaction_session_timeout=300' });
    client.on('error', () => {});
    await client.connect();
    after(() => client.end().catch(() => {}));
    await client.query('BEGIN');
    await client.query('SELECT 1');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 800); // the whole thread stopped, as by SIGSTOP
    const error = await client.query('SELECT 2').then(() => null, (e: unknown) => e);
    assert.equal((error as { code?: string } | null)?.code, '25P03', String(error));
    assert.equal(isStoreUnavailable(error), true);
  });

  // More instances than the server's connections allow (or a role's CONNECTION LIMIT): a pool that
  // cannot open a session is a store out of reach for now (503, retried), not an unexpected error.
  test('a connection refused for the connection limit fails as a lost store', async () => {
    const role = `limited_${process.pid}`;
    const admin = await openStore({ databaseUrl: process.env.DATABASE_URL, poolSize: 1 });
    await sql`CREATE ROLE ${sql.id(role)} LOGIN CONNECTION LIMIT 1`.execute(admin.db);
    try {
      const url = new URL(process.env.DATABASE_URL!);
      url.username = role;
      url.password = '';
      const limited = await openStore({ databaseUrl: url.toString(), poolSize: 2 });
      const results = await Promise.allSettled([1, 2].map(() => sql`SELECT pg_sleep(0.2)`.execute(limited.db)));
      await limited.close().catch(() => {});
      const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as { code?: string });
      // One of the two is refused, or both when the pool's first session had not yet left (a race
      // of the server's own bookkeeping): each refusal is the limit's, and a lost store.
      assert.ok(refused.length >= 1, 'a session over the limit is refused');
      assert.deepEqual(refused.map((e) => [e.code, isStoreUnavailable(e)]), refused.map(() => ['53300', true]));
    } finally {
      await sql`DROP ROLE IF EXISTS ${sql.id(role)}`.execute(admin.db);
      await admin.close();
    }
  });
});
