import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/db/store.ts';
import { createJobQueue, type JobQueue } from '../../src/queue/queue.ts';
import { waitUntil } from '../support/imports.ts';
import { pgliteTemplate } from '../support/pglite-template.ts';

// PGlite has one session, handed out in turns (src/db/pglite-dialect.ts): requests before the job
// queue's work (store.background), each turn handed over after a trip round the event loop, and a
// background turn at least every short window however many requests wait.
describe('PGlite\'s one session in turns: requests before background work', { skip: process.env.DATABASE_URL ? 'PGlite only' : false }, () => {
  let store: Store;
  before(async () => {
    store = await openStore({ dataDir: 'memory://', initialData: await pgliteTemplate() });
  });
  after(() => store.close());

  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => { open = resolve; });
    return { open, opened };
  };
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A transaction that holds the session until `until` resolves. */
  const holdSession = (until: Promise<void>) => store.db.transaction().execute(async (trx) => {
    await sql`SELECT 1`.execute(trx);
    await until;
  });

  test('a request queued behind background work goes before it, after the turn in progress', async () => {
    const order: string[] = [];
    const hold = gate();
    const holding = store.background(() => holdSession(hold.opened).then(() => order.push('holder')));
    await pause(20);
    const queued = [1, 2, 3].map((n) => store.background(async () => {
      await sql`SELECT 1`.execute(store.db);
      order.push(`background ${n}`);
    }));
    await pause(20);
    const request = sql`SELECT 1`.execute(store.db).then(() => order.push('request'));
    await pause(20);
    hold.open();
    await Promise.all([holding, ...queued, request]);
    assert.deepEqual(order, ['holder', 'request', 'background 1', 'background 2', 'background 3']);
  });

  test('a request that arrives while background turns run back to back is read and answered before the rest of them', async () => {
    // PGlite answers through promises alone: were each turn handed straight to the next, the
    // event loop would not reach its timers or I/O until every queued turn had run.
    const order: string[] = [];
    const hold = gate();
    const holding = store.background(() => holdSession(hold.opened));
    await pause(20);
    const queued = [1, 2, 3, 4].map((n) => store.background(async () => {
      await sql`SELECT pg_sleep(0.03)`.execute(store.db);
      order.push(`background ${n}`);
    }));
    await pause(20);
    const request = new Promise<void>((resolve, reject) => setTimeout(() => {
      sql`SELECT 1`.execute(store.db).then(() => { order.push('request'); resolve(); }, reject);
    }, 5));
    hold.open();
    await Promise.all([holding, ...queued, request]);
    assert.ok(order.indexOf('request') <= 1, `the request came after ${order.indexOf('request')} background turns: ${order.join(', ')}`);
  });

  // The queue's three ways to run a handler: a job a call, a job a call shared between owners (the
  // migration records), a fetched batch a call (webhook deliveries).
  const starters: Array<[string, (queue: JobQueue, name: string, handle: () => Promise<void>) => Promise<unknown>]> = [
    ['work', (queue, name, handle) => queue.work(name, { concurrency: 1, pollingIntervalSeconds: 0.5 }, handle)],
    ['work shared between owners', (queue, name, handle) => queue.work(name, { concurrency: 2, pollingIntervalSeconds: 0.5, shared: true }, handle)],
    ['workBatches', (queue, name, handle) => queue.workBatches(name, { concurrency: 1, pollingIntervalSeconds: 0.5, batchSize: 1 }, handle)],
  ];
  for (const [how, start] of starters) {
    test(`a job queue handler's statements wait in the background lane (${how})`, async () => {
      const queue = createJobQueue(store);
      await queue.start();
      try {
        const name = `turns_probe_${how.replace(/\W+/g, '_')}`;
        await queue.define(name);
        const order: string[] = [];
        const held = gate();
        let handling = false;
        await start(queue, name, async () => {
          handling = true;
          await held.opened;
          await sql`SELECT 1`.execute(store.db);
          order.push('job');
        });
        await queue.send(name, { org: 1 });
        await waitUntil(async () => handling, 'the job to start');
        // A background turn holds the session; the job's statement, then a request's, queue behind it.
        const hold = gate();
        const holding = store.background(() => holdSession(hold.opened));
        await pause(20);
        held.open();
        await pause(20);
        const request = sql`SELECT 1`.execute(store.db).then(() => order.push('request'));
        await pause(20);
        hold.open();
        await Promise.all([holding, request]);
        await waitUntil(async () => order.length === 2, 'the job to end');
        assert.deepEqual(order, ['request', 'job']);
      } finally {
        await queue.stop();
      }
    });
  }

  test('requests one after another do not stop the background work: it has a turn within a short window', async () => {
    const hold = gate();
    const holding = holdSession(hold.opened);
    await pause(20);
    let backgroundAt: number | null = null;
    const queued = store.background(async () => {
      await sql`SELECT 1`.execute(store.db);
      backgroundAt = performance.now();
    });
    // Two requests always waiting, each sending the next as soon as it is answered, for a second.
    const started = performance.now();
    let answered = 0;
    const client = async () => {
      while (performance.now() - started < 1000) {
        await sql`SELECT count(*) FROM generate_series(1, 2000)`.execute(store.db);
        answered += 1;
      }
    };
    const clients = [client(), client()];
    hold.open();
    await Promise.all([holding, queued, ...clients]);
    assert.notEqual(backgroundAt, null);
    const waited = backgroundAt! - started;
    assert.ok(waited < 500, `the background turn came ${Math.round(waited)} ms into a second of requests`);
    assert.ok(answered > 20, `${answered} requests answered meanwhile`);
  });
});
