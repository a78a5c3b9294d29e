import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { QUEUE_SCHEMA } from '../../src/queue/queue.ts';
import { waitUntil } from '../support/imports.ts';
import { buildTestApp, unique } from '../support/test-app.ts';

// The queue's own statements (pg-boss's fetch, complete, fail) run outside any transaction of ours,
// and pg-boss does not await some of them: one that the store rolls back to settle a deadlock is
// tried again, as one that finds the store away is, instead of rejecting where nobody listens and
// ending the process. On PGlite and on PostgreSQL.
const t = await buildTestApp();
const db = t.store.db;

describe('the job queue and the store\'s conflicts', () => {
  test('a job whose completion is rolled back once to settle a deadlock is completed, and its handler ran once', async () => {
    const queue = unique('conflict_queue').toLowerCase().replace(/\W/g, '_');
    const trigger = `${queue}_deadlock`;
    // PostgreSQL's own deadlock error, raised once, when pg-boss marks a job of this queue completed.
    await sql.raw(`CREATE SEQUENCE ${trigger}`).execute(db);
    await sql.raw(`CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.name = '${queue}' AND NEW.state = 'completed' AND nextval('${trigger}') = 1 THEN
          RAISE EXCEPTION 'deadlock detected (planted)' USING ERRCODE = '40P01';
        END IF;
        RETURN NEW;
      END $$`).execute(db);
    await sql.raw(`CREATE TRIGGER ${trigger} BEFORE UPDATE ON ${QUEUE_SCHEMA}.job FOR EACH ROW EXECUTE FUNCTION ${trigger}()`).execute(db);
    after(async () => {
      await t.queue.offWork(queue);
      for (const drop of [`DROP TRIGGER ${trigger} ON ${QUEUE_SCHEMA}.job`, `DROP FUNCTION ${trigger}()`, `DROP SEQUENCE ${trigger}`]) await sql.raw(drop).execute(db);
    });
    await t.queue.define(queue, { retryLimit: 3, retryDelay: 1, expireInSeconds: 30 });
    const runs: string[] = [];
    await t.queue.work<{ n: number }>(queue, { concurrency: 1, pollingIntervalSeconds: 0.5 }, async (job) => { runs.push(job.id); });
    const id = await t.queue.send(queue, { n: 1 });
    const stateOf = async () => (await sql<{ state: string }>`SELECT state FROM ${sql.table(`${QUEUE_SCHEMA}.job`)} WHERE id = ${id}::uuid`.execute(db)).rows[0]?.state;
    await waitUntil(async () => (await stateOf()) === 'completed', 'the job is completed');
    const { rows: [planted] } = await sql<{ used: boolean }>`SELECT is_called AS used FROM ${sql.table(trigger)}`.execute(db);
    assert.equal(planted!.used, true, 'the deadlock was raised');
    assert.deepEqual(runs, [id], 'the handler ran once: the completion was tried again, not the job');
  });
});
