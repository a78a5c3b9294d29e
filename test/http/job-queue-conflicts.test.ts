import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { QUEUE_SCHEMA } from '../../src/queue/queue.ts';
import { plantConflictAt } from '../support/accounts.ts';
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
    // PostgreSQL's own deadlock error, raised once, when pg-boss marks a job of this queue completed.
    const planted = await plantConflictAt(db, { table: `${QUEUE_SCHEMA}.job`, event: 'UPDATE', when: `NEW.name = '${queue}' AND NEW.state = 'completed'` });
    after(async () => {
      await t.queue.offWork(queue);
      await planted.remove();
    });
    await t.queue.define(queue, { retryLimit: 3, retryDelay: 1, expireInSeconds: 30 });
    const runs: string[] = [];
    await t.queue.work<{ n: number }>(queue, { concurrency: 1, pollingIntervalSeconds: 0.5 }, async (job) => { runs.push(job.id); });
    const id = await t.queue.send(queue, { n: 1 });
    const stateOf = async () => (await sql<{ state: string }>`SELECT state FROM ${sql.table(`${QUEUE_SCHEMA}.job`)} WHERE id = ${id}::uuid`.execute(db)).rows[0]?.state;
    await waitUntil(async () => (await stateOf()) === 'completed', 'the job is completed');
    assert.equal(await planted.fired(), true, 'the deadlock was raised');
    assert.deepEqual(runs, [id], 'the handler ran once: the completion was tried again, not the job');
  });
});
