import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { QUEUE_SCHEMA } from '../../src/queue/queue.ts';
import { fetchShared, sharesOf, startSharedWorker, type FetchedJob, type Holdings } from '../../src/queue/shared-work.ts';
import { waitUntil } from '../support/imports.ts';
import { buildTestApp, unique } from '../support/test-app.ts';

// Workers shared out between organisations (D20 fairness, src/queue/shared-work.ts): the shares an
// instance's concurrency gives, and fetchShared's picks over pg-boss's job table, on a queue of each
// test's own (no worker runs it: the test fetches as the shared worker's loop would).

const t = await buildTestApp();

describe('the shares of an instance\'s workers', () => {
  test('half of the workers each while another owner waits; all but one for an owner alone; never less than one', () => {
    assert.deepEqual(sharesOf(8), { shared: 4, alone: 7 });
    assert.deepEqual(sharesOf(4), { shared: 2, alone: 3 });
    assert.deepEqual(sharesOf(3), { shared: 1, alone: 2 });
    assert.deepEqual(sharesOf(2), { shared: 1, alone: 1 });
    assert.deepEqual(sharesOf(1), { shared: 1, alone: 1 });
  });
});

describe('fetching for shared workers', () => {
  const CONCURRENCY = 8;
  type Data = { org: number; lane?: string };
  // The jobs the tests queued, deleted when they end (their queues stay: pg-boss's jobs reference them).
  const created: Array<{ name: string; id: string }> = [];
  after(async () => {
    for (const { name, id } of created) await t.queue.boss.deleteJob(name, id);
  });
  const send = async (name: string, data: Data, startAfter?: Date) => {
    const id = (await t.queue.send<Data>(name, data, { startAfter }))!;
    created.push({ name, id });
    return id;
  };

  /**
   * What an instance holds: `{ 1: 2 }` is two jobs of organisation 1 (in no lane), `{ 1: { a: 2, b: 1 } }`
   * two in its lane a and one in its lane b.
   */
  const holding = (held: Record<number, number | Record<string, number>>): Holdings => {
    const lanes = Object.entries(held).map(([org, n]) => [org, typeof n === 'number' ? { '': n } : n] as const);
    return {
      organisations: new Map(lanes.map(([org, n]) => [org, Object.values(n).reduce((a, b) => a + b, 0)])),
      lanes: new Map(lanes.map(([org, n]) => [org, new Map(Object.entries(n))])),
    };
  };

  /**
   * A queue of the test's own with `counts[org]` jobs of each org queued, the orgs in turn (all of the
   * first before the next); `{ 1: { a: 3, b: 2 } }` queues 3 jobs in organisation 1's lane a, then 2 in its lane b.
   */
  async function queued(counts: Record<number, number | Record<string, number>>) {
    const name = unique('shared_work').replace(/-/g, '_');
    await t.queue.define(name, { retryLimit: 0 });
    // One statement a job, so each has its own created_on: the first org's jobs are the oldest.
    for (const [org, n] of Object.entries(counts)) {
      for (const [lane, m] of Object.entries(typeof n === 'number' ? { '': n } : n)) {
        for (let i = 0; i < m; i++) await send(name, lane === '' ? { org: Number(org) } : { org: Number(org), lane });
      }
    }
    const take = (held: Record<number, number | Record<string, number>>, limit: number) =>
      fetchShared<Data>(t.store.db, QUEUE_SCHEMA, { name, concurrency: CONCURRENCY }, holding(held), limit);
    const fetch = async (held: Record<number, number | Record<string, number>>, limit: number) => (await take(held, limit)).map((job) => job.data.org);
    /** The jobs taken, counted by organisation and lane ("1/a"). */
    const fetchLanes = async (held: Record<number, number | Record<string, number>>, limit: number) =>
      perOrg((await take(held, limit)).map((job) => `${job.data.org}/${job.data.lane ?? ''}`));
    return { name, fetch, fetchLanes };
  }
  const perOrg = (orgs: Array<string | number>) =>
    Object.fromEntries([...new Set(orgs)].sort().map((org) => [org, orgs.filter((o) => o === org).length]));

  test('with nothing in hand and two owners waiting, owners are served in turn, whoever queued first', async () => {
    const q = await queued({ 1: 6, 2: 6 });
    const [first] = await fetchShared<Data>(t.store.db, QUEUE_SCHEMA, { name: q.name, concurrency: CONCURRENCY }, holding({}), 1);
    assert.deepEqual(first?.data, { org: 1 });
    // Taken as pg-boss's own fetch takes a job: active, its retry count untouched.
    assert.equal((await t.queue.boss.getJobById(q.name, first!.id))?.state, 'active');
    assert.equal(first!.retryCount, 0);
    // Organisation 1 now holds one: organisation 2's next, then one each.
    assert.deepEqual(perOrg(await q.fetch({ 1: 1 }, 3)), { 1: 1, 2: 2 });
  });

  test('a fetch of 4 for 8 workers, nothing in hand, takes 2 jobs of each owner', async () => {
    const q = await queued({ 1: 6, 2: 6 });
    assert.deepEqual(perOrg(await q.fetch({}, 4)), { 1: 2, 2: 2 });
  });

  test('an owner holding 2 while another waits takes at most half the workers in all (2 more), however large the fetch', async () => {
    const q = await queued({ 1: 6, 2: 6 });
    const { shared } = sharesOf(CONCURRENCY);
    assert.equal(shared, 4);
    // Organisation 2, holding none, takes its share too.
    assert.deepEqual(perOrg(await q.fetch({ 1: 2 }, 50)), { 1: shared - 2, 2: shared });
    // At their shares, neither takes more while the other has jobs waiting.
    assert.deepEqual(await q.fetch({ 1: shared, 2: shared }, 50), []);
  });

  test('an owner alone takes all the workers but one; what the others hold, with none waiting, does not count', async () => {
    const q = await queued({ 1: 10 });
    const { alone } = sharesOf(CONCURRENCY);
    assert.equal(alone, 7);
    assert.deepEqual(perOrg(await q.fetch({ 2: 3 }, 50)), { 1: alone });
    assert.deepEqual(await q.fetch({ 1: alone }, 50), []);
    // Once another owner has a job waiting, the one alone is past its share: only the newcomer's job is taken.
    await send(q.name, { org: 2 });
    assert.deepEqual(await q.fetch({ 1: alone }, 50), [2]);
  });

  test('jobs not yet due are passed over: they hide no due job of their organisation, and an organisation with none due is not waiting', async () => {
    const q = await queued({});
    const later = new Date(Date.now() + 3_600_000);
    // Organisation 1's retries, due in an hour, queued before its one job due now; organisation 2 has only retries.
    for (let i = 0; i < 5; i++) await send(q.name, { org: 1 }, later);
    await send(q.name, { org: 1 });
    for (let i = 0; i < 5; i++) await send(q.name, { org: 2 }, later);
    // Organisation 1 holds more than half: it is alone with jobs due, so it may take all but one.
    assert.deepEqual(await q.fetch({ 1: sharesOf(CONCURRENCY).shared }, 50), [1]);
    assert.deepEqual(await q.fetch({}, 50), []);
  });

  test('an organisation alone shares its share between its lanes: half each while another lane waits, all but one for a lane alone', async () => {
    // Organisation 1 alone may hold 7 of the 8 workers; its lanes share those 7 as organisations share the 8.
    const { alone } = sharesOf(CONCURRENCY);
    const lanes = sharesOf(alone);
    assert.deepEqual(lanes, { shared: 3, alone: 6 });
    // Lane a queued first and holds nothing: it still takes only its half while lane b waits.
    const q = await queued({ 1: { a: 10, b: 10 } });
    assert.deepEqual(await q.fetchLanes({}, 50), { '1/a': lanes.shared, '1/b': lanes.shared });
    // Lane a at its share (an endpoint whose receiver never answers): lane b still takes its own.
    assert.deepEqual(await q.fetchLanes({ 1: { a: lanes.shared } }, 50), { '1/b': lanes.shared });
    assert.deepEqual(await q.fetchLanes({ 1: { a: lanes.shared, b: lanes.shared } }, 50), {});
  });

  test('a lane alone in its organisation takes all of the share but one: another lane\'s first job goes at once', async () => {
    const q = await queued({ 1: { a: 10 } });
    const lanes = sharesOf(sharesOf(CONCURRENCY).alone);
    assert.deepEqual(await q.fetchLanes({}, 50), { '1/a': lanes.alone });
    assert.deepEqual(await q.fetchLanes({ 1: { a: lanes.alone } }, 50), {});
    await send(q.name, { org: 1, lane: 'b' });
    assert.deepEqual(await q.fetchLanes({ 1: { a: lanes.alone } }, 50), { '1/b': 1 });
  });

  test('with two organisations waiting, a lane takes half of its organisation\'s half; the lanes of one organisation take turns', async () => {
    const q = await queued({ 1: { a: 10, b: 10 }, 2: 10 });
    const { shared } = sharesOf(CONCURRENCY);
    assert.deepEqual(await q.fetchLanes({}, 50), { '1/a': shared / 2, '1/b': shared / 2, '2/': shared });
    // Fetches of one job: organisations in turn, and organisation 1's lanes in turn within its turns.
    const q2 = await queued({ 1: { a: 10, b: 10 }, 2: 10 });
    const order: string[] = [];
    const held: Record<number, Record<string, number>> = {};
    for (let i = 0; i < 4; i++) {
      const [job] = await fetchShared<Data>(t.store.db, QUEUE_SCHEMA, { name: q2.name, concurrency: CONCURRENCY }, holding(held), 1);
      const lane = job!.data.lane ?? '';
      order.push(`${job!.data.org}/${lane}`);
      held[job!.data.org] = { ...held[job!.data.org], [lane]: (held[job!.data.org]?.[lane] ?? 0) + 1 };
    }
    assert.deepEqual(order, ['1/a', '2/', '1/b', '2/']);
  });

  test('jobs run together (deliveries) are handed to one call per lane, and all fail together when it throws', async () => {
    const q = await queued({ 1: 2, 2: { a: 1, b: 2 } });
    const calls: string[][] = [];
    const worker = startSharedWorker<Data>(t.queue.boss, t.store.db, QUEUE_SCHEMA,
      { name: q.name, concurrency: CONCURRENCY, batchSize: 8, pollingIntervalSeconds: 0.5, together: true },
      async (jobs: Array<FetchedJob<Data>>) => {
        calls.push(jobs.map((job) => `${job.data.org}/${job.data.lane ?? ''}`));
        throw new Error('the batch could not be recorded');
      }, () => {});
    try {
      const states = async () => (await Promise.all(created.filter((c) => c.name === q.name)
        .map(async (c) => (await t.queue.boss.getJobById(q.name, c.id))?.state))).sort();
      await waitUntil(async () => (await states()).every((state) => state === 'failed'), 'every job of the batch failed');
      assert.deepEqual(calls.sort(), [['1/', '1/'], ['2/a'], ['2/b', '2/b']], 'one call for each lane of the fetch\'s five jobs');
    } finally {
      worker.stop();
    }
  });
});
