import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { QUEUE_SCHEMA } from '../../src/queue/queue.ts';
import { fetchShared, sharesOf, startSharedWorker, type FetchedJob, type ForOrganisation } from '../../src/queue/shared-work.ts';
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
  type Data = Required<ForOrganisation>;
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

  /** A queue of the test's own with `counts[org]` jobs of each org queued, the orgs in turn (all of the first before the next). */
  async function queued(counts: Record<number, number>) {
    const name = unique('shared_work').replace(/-/g, '_');
    await t.queue.define(name, { retryLimit: 0 });
    // One statement a job, so each has its own created_on: the first org's jobs are the oldest.
    for (const [org, n] of Object.entries(counts)) {
      for (let i = 0; i < n; i++) await send(name, { org: Number(org) });
    }
    const fetch = async (held: Record<number, number>, limit: number) => {
      const jobs = await fetchShared<Data>(t.store.db, QUEUE_SCHEMA, { name, concurrency: CONCURRENCY },
        new Map(Object.entries(held)), limit);
      return jobs.map((job) => job.data.org);
    };
    return { name, fetch };
  }
  const perOrg = (orgs: number[]) => Object.fromEntries([...new Set(orgs)].sort().map((org) => [org, orgs.filter((o) => o === org).length]));

  test('with nothing in hand and two owners waiting, owners are served in turn, whoever queued first', async () => {
    const q = await queued({ 1: 6, 2: 6 });
    const [first] = await fetchShared<Data>(t.store.db, QUEUE_SCHEMA, { name: q.name, concurrency: CONCURRENCY }, new Map(), 1);
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

  test('jobs run together (deliveries) are handed to one call, and all fail together when it throws', async () => {
    const q = await queued({ 1: 2, 2: 1 });
    const calls: number[][] = [];
    const worker = startSharedWorker<Data>(t.queue.boss, t.store.db, QUEUE_SCHEMA,
      { name: q.name, concurrency: CONCURRENCY, batchSize: 4, pollingIntervalSeconds: 0.5, together: true },
      async (jobs: Array<FetchedJob<Data>>) => {
        calls.push(jobs.map((job) => job.data.org).sort());
        throw new Error('the batch could not be recorded');
      }, () => {});
    try {
      const states = async () => (await Promise.all(created.filter((c) => c.name === q.name)
        .map(async (c) => (await t.queue.boss.getJobById(q.name, c.id))?.state))).sort();
      await waitUntil(async () => (await states()).every((state) => state === 'failed'), 'every job of the batch failed');
      assert.deepEqual(calls, [[1, 1, 2]], 'one call for the fetch\'s three jobs');
    } finally {
      worker.stop();
    }
  });
});
