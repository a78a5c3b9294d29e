import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import { createJobQueue } from '../../src/queue/queue.ts';
import { isolatedDatabase, waitUntil } from '../support/imports.ts';
import { pgliteTemplate } from '../support/pglite-template.ts';

// A process shuts down by stopping its queue (waiting a while for the jobs in hand), then closing its
// store. A job whose handler is still running when the wait runs out is failed by the stop, to run
// again; when the handler ends, pg-boss completes the job without awaiting the statement. On a closed
// store that statement fails where nothing can catch it: the process must not end on an unhandled
// rejection, and the failure is reported.
test('a job that outlives the queue stop, ending after the store closed, is reported, not an unhandled rejection; other statements still fail', async () => {
  const isolated = process.env.DATABASE_URL ? await isolatedDatabase() : null;
  after(async () => { await isolated?.drop(); });
  const store = await openStore({ databaseUrl: isolated?.url ?? '', dataDir: 'memory://', initialData: isolated ? undefined : await pgliteTemplate() });
  await migrate(store);
  const reported: Error[] = [];
  const queue = createJobQueue(store, { onError: (error) => reported.push(error) });
  await queue.start();
  await queue.define('slow_job');

  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => { unhandled.push(reason); };
  process.on('unhandledRejection', onUnhandled);
  after(() => { process.off('unhandledRejection', onUnhandled); });

  let started = false;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => { release = resolve; });
  await queue.work('slow_job', { concurrency: 1, pollingIntervalSeconds: 0.5 }, async () => {
    started = true;
    await gate;
  });
  await queue.send('slow_job', {});
  await waitUntil(async () => started, 'the job to start');

  await queue.stop(1000);
  await store.close();
  release();
  await waitUntil(async () => reported.length > 0, 'the lost completion to be reported', 5000);
  await new Promise((resolve) => setTimeout(resolve, 200));

  assert.deepEqual(unhandled, []);
  assert.match(reported[0]!.message, /^a job's completion or failure after the queue stopped was not written \(it runs again\): /);
  // Any other statement after the stop still fails to its caller, which awaits it.
  await assert.rejects(queue.send('slow_job', {}), /driver has already been destroyed/);
});
