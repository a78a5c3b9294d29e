import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { buildTestApp, type TestApp } from '../support/test-app.ts';
import { waitUntil } from '../support/imports.ts';
import { VACUUM_QUEUE, vacuumChurnedTables } from '../../src/queue/store-vacuum.ts';
import { MIGRATION_CHURNED_TABLES } from '../../src/modules/migration-jobs/index.ts';

// PGlite has no autovacuum: the tables a migration job rewrites on every record are vacuumed and
// analysed by a job scheduled every minute. A table never vacuumed nor analysed counts -1 tuples.
const t = await buildTestApp({ WORKER_CONCURRENCY: '1' });
// A store no worker has vacuumed yet, for the vacuum run directly.
const fresh = await buildTestApp();

async function counted(app = t): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT reltuples::int AS n FROM pg_class WHERE oid = 'migration_job_records'::regclass`.execute(app.store.db);
  return rows[0]!.n;
}

/** The fewest tuples counted in any partition of the queue's job table (one a queue). */
async function queueCounted(app: TestApp): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT min(c.reltuples)::int AS n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'pgboss.job'::regclass`.execute(app.store.db);
  return rows[0]!.n;
}

describe('vacuuming what a migration job churns', () => {
  test('on PGlite, scheduled every minute and run by the workers; on PostgreSQL, left to autovacuum', async () => {
    const { rows } = await sql<{ name: string; cron: string }>`SELECT name, cron FROM pgboss.schedule WHERE name = ${VACUUM_QUEUE}`.execute(t.store.db);
    if (t.store.kind !== 'pglite') {
      assert.deepEqual(rows, []);
      return;
    }
    assert.deepEqual(rows, [{ name: VACUUM_QUEUE, cron: '* * * * *' }]);
    assert.equal(await counted(), -1);
    await t.queue.send(VACUUM_QUEUE, {});
    await waitUntil(async () => (await counted()) >= 0, 'the vacuum job to run', 15_000);
  });

  test('the vacuum runs on either store, over the tables the migration jobs module names and the queue\'s', async () => {
    if (fresh.store.kind === 'pglite') assert.deepEqual([await counted(fresh), await queueCounted(fresh)], [-1, -1]);
    await vacuumChurnedTables(fresh.store, MIGRATION_CHURNED_TABLES);
    assert.equal(await counted(fresh), 0);
    assert.ok((await queueCounted(fresh)) >= 0, 'every partition of the queue\'s job table is analysed');
  });
});
