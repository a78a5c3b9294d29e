import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import {
  blockedReason, createDeliveryAgents, createWebhook, deleteWebhook, deliverBatch, deliverOnce, enableWebhook, FANOUT_QUEUE, GATHER_SECONDS,
  listWebhooks, MAX_ATTEMPTS, PARALLEL_ATTEMPTS, postWebhook, retryDelayMs, runRetention, webhookDeliveries,
} from '../../src/modules/webhooks/index.ts';
import { QUEUE_SCHEMA } from '../../src/queue/queue.ts';
import { eventsOf } from '../support/events.ts';
import { PG_ONLY, pgSession, processAccount, stage, STAGE_URL, supplierIdOf, waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

// Webhooks (D13) end to end: events made over HTTP, delivered by this app's queue workers to
// receivers on 127.0.0.1 (so private networks are allowed here; the SSRF tests turn that off for
// their own deliveries), retried fast (WEBHOOK_RETRY_BASE_MS=200).
const t = await buildTestApp({ WORKER_CONCURRENCY: '2', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '200' });
const db = t.store.db;

async function webhookFor(tenant: Tenant, receiver: Receiver, events?: string) {
  return createWebhook(db, tenant.organisation, receiver.url, events);
}

/** The endpoint's delivery log, oldest first, once it has `count` rows. */
async function deliveriesOf(id: string, count: number, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { deliveries } = await webhookDeliveries(db, id, 100);
    if (deliveries.length >= count) return deliveries.reverse();
    if (Date.now() > deadline) throw new Error(`webhook ${id} logged ${deliveries.length} of ${count} attempts: ${JSON.stringify(deliveries)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Resolves once nothing more can reach these endpoints for these events: the fan-out has read past
 * every one of them (it sends their delivery jobs in the transaction that moves its cursor, so they
 * all exist), and none of the endpoints' delivery jobs is waiting, retrying or running (a follow-up
 * attempt is sent in the transaction that logs the one before, so it exists before that job
 * completes). What the receivers hold then is all they will be sent, without sleeping to see it.
 */
async function settled(endpointIds: string[], eventIds: string[]) {
  const fannedOut = async () => {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events AS e, webhook_fanout_cursor AS c
      WHERE e.id IN (${sql.join(eventIds.map(Number))}) AND (e.xid, e.id) <= (c.xid, c.event_id)`.execute(db);
    return rows[0]!.n === eventIds.length;
  };
  const pending = async () => {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook_delivery'
      AND data->>'endpoint_id' IN (${sql.join(endpointIds)}) AND state IN ('created', 'retry', 'active')`.execute(db);
    return rows[0]!.n;
  };
  await waitUntil(async () => (await fannedOut()) && (await pending()) === 0, `events ${eventIds.join(', ')} fanned out and delivered`, 20_000);
}

describe('webhook deliveries (D13)', () => {
  test('each event is POSTed as the feed shows it, signed as Standard Webhooks says', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    const hook = await webhookFor(tenant, receiver);
    const payload = await stage(t, tenant);
    const created = await processAccount(t, tenant, payload.external_account_number);
    assert.equal(created.status, 201, created.body);
    const events = await eventsOf(t, tenant, 2);
    const got = await receiver.waitFor(2);
    // Deliveries of different events may arrive in any order (they are separate jobs).
    const byId = new Map(got.map((r) => [r.headers['webhook-id'], r]));
    assert.equal(byId.size, 2);
    for (const event of events) {
      const request = byId.get(event.id)!;
      assert.ok(request, `event ${event.id} delivered`);
      assert.equal(request.path, '/hook');
      assert.equal(request.headers['content-type'], 'application/json');
      assert.match(String(request.headers['webhook-timestamp']), /^\d{10}$/);
      assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]{43}=$/);
      const verified = new Webhook(hook.secret).verify(request.body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      });
      assert.deepEqual(verified, event);
      assert.deepEqual(JSON.parse(request.body), event);
    }
    assert.deepEqual(events.map((e) => e.type), ['import_process.staged', 'import_process.completed']);
    // A different secret does not verify: the signature depends on it.
    const other = await webhookFor(tenant, receiver);
    const first = got[0]!;
    assert.throws(() => new Webhook(other.secret).verify(first.body, first.headers as Record<string, string>), /No matching signature found/);
  });

  test('a refused delivery (500) comes again with the same webhook-id; the log has both attempts', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver([500]);
    const hook = await webhookFor(tenant, receiver);
    await stage(t, tenant);
    const [first, second] = await receiver.waitFor(2);
    assert.equal(first!.headers['webhook-id'], second!.headers['webhook-id']);
    assert.equal(first!.body, second!.body);
    const [event] = await eventsOf(t, tenant, 1);
    const log = await deliveriesOf(hook.webhook, 2);
    assert.equal(log.length, 2);
    for (const row of log) {
      assert.ok(Number.isInteger(row.latency_ms) && row.latency_ms! >= 0 && row.latency_ms! < 10_000, `latency ${row.latency_ms}`);
      assert.match(row.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    }
    assert.deepEqual(log.map(({ latency_ms: _l, at: _a, ...rest }) => rest), [
      { event: event.id, attempt: 1, status_code: 500, error: 'HTTP 500' },
      { event: event.id, attempt: 2, status_code: 200, error: null },
    ]);
    // The second attempt waited at least the base delay after the first.
    assert.ok(Date.parse(log[1]!.at) - Date.parse(log[0]!.at) >= 200, JSON.stringify(log));
  });

  test('a receiver that takes the delivery and never answers: a failed attempt once the time-out has passed', async () => {
    const receiver = await startReceiver(['hang']);
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    const started = Date.now();
    const { latencyMs, ...result } = await postWebhook(receiver.url, '{}', { 'content-type': 'application/json' }, { allowPrivateNetworks: true, agents, timeoutMs: 300 });
    assert.deepEqual(result, { status: null, error: 'no answer within 300 ms', refused: false });
    assert.ok(Date.now() - started >= 290 && latencyMs >= 290, `gave up after ${latencyMs} ms`);
    assert.equal(receiver.received.length, 1, 'the delivery was sent');
    receiver.release();
  });

  test('the pool has a socket for every attempt the workers make at once: none waits for one, and none is failed unsent', async () => {
    // A slow receiver (one organisation's, say) on a host others deliver to as well: every attempt
    // the workers make at once is sent at once, so each is answered within its own deadline.
    const receiver = await startReceiver();
    receiver.delayMs = 1000;
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    const results = await Promise.all(Array.from({ length: PARALLEL_ATTEMPTS }, () =>
      postWebhook(receiver.url, '{}', { 'content-type': 'application/json' }, { allowPrivateNetworks: true, agents, timeoutMs: 1800 })));
    assert.deepEqual(results.map((r) => r.error ?? r.status).filter((r) => r !== 200), []);
    assert.equal(receiver.received.length, PARALLEL_ATTEMPTS);
  });

  test('one organisation\'s receivers that never answer hold at most half the delivery workers: another organisation\'s ping goes at once', async () => {
    // 150 pings to a receiver that holds every request open until its 10 s time-out: more than the
    // 100 attempts the workers make at once. Taken oldest first, they would hold every worker, and
    // the other organisation's ping would wait 10 s for the first of them to end.
    const slow = await createTenant(t);
    const hanging = await startReceiver([], 'hang');
    const held = await webhookFor(slow, hanging, 'migration_job.cancelled');
    try {
      for (let i = 0; i < 150; i++) {
        assert.equal((await call(t.app, 'POST', `/v1/data-import/webhook-endpoints/${held.webhook}/test/`, { token: slow.token })).status, 202);
      }
      await hanging.waitFor(PARALLEL_ATTEMPTS / 2);
      const other = await createTenant(t);
      const receiver = await startReceiver();
      const hook = await webhookFor(other, receiver, 'migration_job.cancelled');
      const asked = Date.now();
      assert.equal((await call(t.app, 'POST', `/v1/data-import/webhook-endpoints/${hook.webhook}/test/`, { token: other.token })).status, 202);
      const [ping] = await receiver.waitFor(1, 5000);
      assert.ok(ping!.at - asked < 5000, `the ping arrived after ${ping!.at - asked} ms`);
      assert.ok(hanging.received.length < 150, 'the slow organisation\'s pings were still waiting');
    } finally {
      await deleteWebhook(db, held.webhook);
      hanging.then = 200;
      hanging.release();
    }
  });

  test('an endpoint that never answers holds at most its share of its organisation\'s deliveries: the organisation\'s other endpoint gets its events at once', async () => {
    // The organisation alone may hold 99 of the 100 attempts; its hanging endpoint, alone in it, 98.
    // Taken together with the hanging ones (in one batch, or behind them in the organisation's share),
    // the other endpoint's deliveries would wait the 10 s time-out, again and again.
    const tenant = await createTenant(t);
    const hanging = await startReceiver([], 'hang');
    const held = await webhookFor(tenant, hanging, 'migration_job.cancelled');
    const receiver = await startReceiver();
    const hook = await webhookFor(tenant, receiver, 'migration_job.cancelled');
    try {
      for (let i = 0; i < 150; i++) {
        assert.equal((await call(t.app, 'POST', `/v1/data-import/webhook-endpoints/${held.webhook}/test/`, { token: tenant.token })).status, 202);
      }
      await hanging.waitFor(PARALLEL_ATTEMPTS / 2);
      const asked = Date.now();
      for (let i = 0; i < 20; i++) {
        assert.equal((await call(t.app, 'POST', `/v1/data-import/webhook-endpoints/${hook.webhook}/test/`, { token: tenant.token })).status, 202);
      }
      const pings = await receiver.waitFor(20, 8000);
      const last = Math.max(...pings.map((ping) => ping.at));
      assert.ok(last - asked < 5000, `the 20 pings took ${last - asked} ms`);
      assert.ok(hanging.received.length < 150, 'the hanging endpoint\'s pings were still waiting');
    } finally {
      await deleteWebhook(db, held.webhook);
      hanging.then = 200;
      hanging.release();
    }
  });

  test('no answer (connection refused) and a redirect are failed attempts; the redirect is not followed', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver([302]);
    const hook = await webhookFor(tenant, receiver);
    const closed = await startReceiver();
    await closed.close();
    const dead = await createWebhook(db, tenant.organisation, closed.url);
    await stage(t, tenant);
    const got = await receiver.waitFor(2);
    assert.deepEqual(got.map((r) => r.path), ['/hook', '/hook']);
    const log = await deliveriesOf(hook.webhook, 2);
    assert.deepEqual(log.map((r) => [r.attempt, r.status_code, r.error]), [[1, 302, 'HTTP 302'], [2, 200, null]]);
    const deadLog = await deliveriesOf(dead.webhook, 2);
    assert.deepEqual(deadLog.map((r) => [r.attempt, r.status_code, r.error]), [
      [1, null, `connect ECONNREFUSED 127.0.0.1:${closed.port}`],
      [2, null, `connect ECONNREFUSED 127.0.0.1:${closed.port}`],
    ]);
    const [event] = await eventsOf(t, tenant, 1);
    await settled([hook.webhook], [event.id]);
    assert.equal(receiver.received.length, 2, 'nothing after the delivered attempt');
    assert.equal((await webhookDeliveries(db, hook.webhook, 100)).deliveries.length, 2);
  });

  test('410 disables the endpoint: no more deliveries to it, and the list says why', async () => {
    const tenant = await createTenant(t);
    const gone = await startReceiver([], 410);
    const control = await startReceiver();
    const goneHook = await webhookFor(tenant, gone);
    await webhookFor(tenant, control);
    await stage(t, tenant);
    await gone.waitFor(1);
    await deliveriesOf(goneHook.webhook, 1);
    const [event] = await eventsOf(t, tenant, 1);
    const listed = (await listWebhooks(db, tenant.organisation)).webhooks.find((w) => w.webhook === goneHook.webhook)!;
    assert.match(listed.disabled_reason!, new RegExp(`^the endpoint answered 410 Gone to event ${event.id} at \\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z$`));
    assert.deepEqual({ ...listed, disabled_reason: null }, {
      webhook: goneHook.webhook, url: gone.url, events: null, enabled: false, disabled_reason: null, created_at: listed.created_at,
    });
    // The next event reaches the control endpoint, never the disabled one.
    await stage(t, tenant);
    await control.waitFor(2);
    const [, next] = await eventsOf(t, tenant, 2);
    await settled([goneHook.webhook], [next!.id]);
    assert.equal(gone.received.length, 1);
    assert.deepEqual((await deliveriesOf(goneHook.webhook, 1)).map((r) => [r.attempt, r.status_code, r.error]), [[1, 410, 'HTTP 410']]);
  });

  test('enabled again after a 410, an endpoint gets the events recorded from then on, not those of while it was disabled', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver([410]);
    const hook = await webhookFor(tenant, receiver);
    await stage(t, tenant);
    await deliveriesOf(hook.webhook, 1);
    assert.equal((await listWebhooks(db, tenant.organisation)).webhooks[0]!.enabled, false);
    await stage(t, tenant); // recorded while disabled
    const enabled = await enableWebhook(db, hook.webhook);
    assert.deepEqual(enabled, { webhook: hook.webhook, url: receiver.url, events: null, enabled: true, disabled_reason: null, created_at: enabled.created_at });
    await stage(t, tenant);
    const [gone, whileDisabled, afterEnable] = await eventsOf(t, tenant, 3);
    await receiver.waitFor(2);
    await settled([hook.webhook], [gone!.id, whileDisabled!.id, afterEnable!.id]);
    assert.deepEqual(receiver.received.map((r) => [r.headers['webhook-id'], r.answer]), [[gone!.id, 410], [afterEnable!.id, 200]]);
    assert.deepEqual([gone, whileDisabled, afterEnable].map((e) => e.type), ['import_process.staged', 'import_process.staged', 'import_process.staged']);
  });

  test('--events filters: an endpoint for import_process.completed gets only those', async () => {
    const tenant = await createTenant(t);
    const filtered = await startReceiver();
    const all = await startReceiver();
    const filteredHook = await webhookFor(tenant, filtered, 'import_process.completed');
    const allHook = await webhookFor(tenant, all);
    const payload = await stage(t, tenant);
    await processAccount(t, tenant, payload.external_account_number);
    await processAccount(t, tenant, payload.external_account_number, { dry_run: true });
    await all.waitFor(3);
    await filtered.waitFor(1);
    await settled([filteredHook.webhook, allHook.webhook], (await eventsOf(t, tenant, 3)).map((e) => e.id));
    assert.deepEqual(filtered.received.map((r) => JSON.parse(r.body).type), ['import_process.completed']);
    assert.deepEqual(all.received.map((r) => JSON.parse(r.body).type).sort(),
      ['import_process.completed', 'import_process.dry_run_failed', 'import_process.staged']);
  });

  test('another organisation\'s events never reach the endpoint', async () => {
    const mine = await createTenant(t);
    const theirs = await createTenant(t);
    const receiver = await startReceiver();
    const hook = await webhookFor(mine, receiver);
    await stage(t, theirs);
    await stage(t, mine);
    await receiver.waitFor(1);
    const [theirEvent] = await eventsOf(t, theirs, 1);
    const [myEvent] = await eventsOf(t, mine, 1);
    await settled([hook.webhook], [theirEvent.id, myEvent.id]);
    assert.deepEqual(receiver.received.map((r) => JSON.parse(r.body).import_supplier), [mine.supplier]);
  });

  test('40 stagings by 4 clients write a few fan-out jobs, not one each; every event is delivered once', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    const hook = await webhookFor(tenant, receiver);
    const fanoutJobs = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM pgboss.job WHERE name = 'webhook_fanout'`.execute(db)).rows[0]!.n);
    const jobsBefore = await fanoutJobs();
    // 4 clients staging 10 accounts each, back to back: a steady load rather than one burst (40
    // transactions started together all check before any has committed, so each writes a job).
    await Promise.all(Array.from({ length: 4 }, async () => {
      for (let i = 0; i < 10; i += 1) await stage(t, tenant);
    }));
    const written = (await fanoutJobs()) - jobsBefore;
    const events = await eventsOf(t, tenant, 40);
    await receiver.waitFor(40);
    await settled([hook.webhook], events.map((e) => e.id));
    // One job waiting to be fetched covers every event committed before its fan-out reads (and a
    // fan-out that saw transactions running runs again): a few jobs, those rechecks included; none
    // when one was waiting already (a recheck after the previous test).
    assert.ok(written <= 10, `${written} fan-out jobs for 40 stagings`);
    assert.deepEqual(receiver.received.map((r) => String(r.headers['webhook-id'])).sort(), events.map((e) => e.id).sort());
    assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 40);
  });

  test('the statement that records an event wakes the fan-out: one job, as pg-boss sends it, only for an organisation with an enabled endpoint and only when none waits', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    // In one transaction, rolled back: the app's own workers never see what it writes. The queue's
    // schema and name and the wait are the service's constants: the trigger (SQL) must agree with them.
    const jobs = sql.table(`${QUEUE_SCHEMA}.job`);
    const rolledBack = new Error('roll back');
    await assert.rejects(db.transaction().execute(async (trx) => {
      const waiting = async () => (await sql<{ id: string }>`SELECT id FROM ${jobs} WHERE name = ${FANOUT_QUEUE} AND state < 'active' ORDER BY created_on, id`.execute(trx)).rows.map((r) => r.id);
      const recordEvent = (ext: string) => sql`INSERT INTO events (supplier_id, type, external_account_number, data)
        VALUES (${supplierId}, 'import_process.staged', ${ext}, '{"first_staging":true}')`.execute(trx);
      // Whatever the app left waiting is taken out of the way.
      await sql`UPDATE ${jobs} SET state = 'completed' WHERE name = ${FANOUT_QUEUE} AND state < 'active'`.execute(trx);
      await recordEvent('T-1');
      assert.deepEqual(await waiting(), [], 'no endpoint: no fan-out job');
      const { webhook } = await createWebhook(trx, tenant.organisation, 'https://receiver.example/hook');
      await recordEvent('T-2');
      const [woken] = await waiting();
      assert.ok(woken, 'an enabled endpoint: a fan-out job');
      await recordEvent('T-3');
      assert.deepEqual(await waiting(), [woken], 'one waiting already: no second job');
      // The job is the one pg-boss would send: the queue's settings, the fan-out's wait.
      const sent = await t.queue.send(FANOUT_QUEUE, {}, { trx, startAfter: GATHER_SECONDS });
      const columns = sql`data, priority, retry_limit, retry_delay, retry_backoff, expire_in, keep_until - start_after AS kept_for,
        start_after - now() AS wait, singleton_key, singleton_on, dead_letter, policy`;
      const jobOf = async (id: string) => (await sql<Record<string, unknown>>`SELECT ${columns} FROM ${jobs} WHERE name = ${FANOUT_QUEUE} AND id = ${id}`.execute(trx)).rows[0];
      assert.deepEqual(await jobOf(woken), await jobOf(sent!));
      // Disabled, the endpoint wakes nothing.
      await sql`UPDATE ${jobs} SET state = 'completed' WHERE name = ${FANOUT_QUEUE} AND state < 'active'`.execute(trx);
      await sql`UPDATE webhook_endpoints SET enabled = false WHERE id = ${webhook}`.execute(trx);
      await recordEvent('T-4');
      assert.deepEqual(await waiting(), [], 'a disabled endpoint: no fan-out job');
      throw rolledBack;
    }), (error) => error === rolledBack);
  });

  test('an event whose transaction was still open when a waiting fan-out ran is delivered once it commits, without waiting for the minute schedule', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const receiver = await startReceiver();
    await webhookFor(tenant, receiver);
    const writer = await pgSession(t.config.databaseUrl);
    const jobs = `${QUEUE_SCHEMA}.job`;
    try {
      // A fan-out job already waiting to be fetched, as an earlier statement's trigger leaves one
      // (a longer wait than the trigger's, so that it is still waiting when the event is recorded).
      const waiting = (await t.queue.send(FANOUT_QUEUE, {}, { startAfter: 1 }))!;
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO events (supplier_id, type, external_account_number, data)
        VALUES ($1, 'import_process.staged', 'LATE-1', '{"first_staging":true}')`, [supplierId]);
      // The event's trigger found that job waiting and wrote none of its own.
      const own = await writer.query(`SELECT count(*)::int AS n FROM ${jobs}
        WHERE name = $1 AND xmin = (pg_current_xact_id()::text::bigint % 4294967296)::text::xid`, [FANOUT_QUEUE]);
      assert.equal(own.rows[0].n, 0, 'the trigger writes no job while one waits');
      const event = (await writer.query(`SELECT id::text FROM events WHERE supplier_id = $1`, [supplierId])).rows[0].id as string;
      // That job is fetched and its fan-out reads while the event's transaction is open: it cannot
      // see the event, but it sees a transaction running, so it queues the fan-out again.
      await waitUntil(async () => {
        const { rows } = await sql<{ state: string }>`SELECT state FROM ${sql.table(jobs)} WHERE name = ${FANOUT_QUEUE} AND id = ${waiting}`.execute(db);
        return rows[0]?.state === 'completed';
      }, 'the waiting fan-out ran');
      assert.equal(receiver.received.length, 0, 'nothing delivered before the commit');
      await writer.query('COMMIT');
      // The minute schedule would deliver it too, up to 60 s later: this must be the fan-out's own
      // next run (a broken recheck still passes once in about eight runs, when the schedule's minute
      // happens to fall here).
      const committed = Date.now();
      const [delivered] = await receiver.waitFor(1, 8_000);
      assert.equal(delivered!.headers['webhook-id'], event);
      assert.ok(Date.now() - committed < 8_000);
    } finally {
      await writer.query('ROLLBACK').catch(() => {});
      await writer.end();
    }
  });

  test('before any process has opened the queue (its tables missing), recording events still works', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const rolledBack = new Error('roll back');
    await assert.rejects(db.transaction().execute(async (trx) => {
      await createWebhook(trx, tenant.organisation, 'https://receiver.example/hook');
      const recordEvent = (ext: string) => sql`INSERT INTO events (supplier_id, type, external_account_number, data)
        VALUES (${supplierId}, 'import_process.staged', ${ext}, '{"first_staging":true}')`.execute(trx);
      // The trigger has run once with the queue in place (its plans made), then the queue's tables
      // go, as on a store no server has started on: the event is still recorded.
      await recordEvent('Q-1');
      await sql`ALTER SCHEMA ${sql.id(QUEUE_SCHEMA)} RENAME TO queue_not_installed`.execute(trx);
      await recordEvent('Q-2');
      const recorded = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE supplier_id = ${supplierId}`.execute(trx);
      assert.equal(recorded.rows[0]!.n, 2);
      throw rolledBack;
    }), (error) => error === rolledBack);
  });

  test('delivery never happens inside the request: a receiver that hangs does not slow staging', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver(['hang']);
    await webhookFor(tenant, receiver);
    const started = Date.now();
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: accountPayload(tenant.supplier) });
    const took = Date.now() - started;
    assert.equal(res.status, 201);
    await receiver.waitFor(1);
    // The receiver holds the delivery open; the request had long finished.
    assert.ok(took < 2000, `staging took ${took} ms`);
    assert.equal(receiver.received.length, 1);
    receiver.release();
  });
  /**
   * One worker's batch of an event to two endpoints, `kept` and `deleted`, both held open by the
   * receiver once it has them (receiver.release() answers 200). Their filter matches nothing the
   * test records, so the app's own workers leave these endpoints alone.
   */
  async function batchToTwoHeldEndpoints() {
    const tenant = await createTenant(t);
    const receiver = await startReceiver(['hang', 'hang']);
    const kept = await createWebhook(db, tenant.organisation, receiver.url, 'migration_job.cancelled');
    const deleted = await createWebhook(db, tenant.organisation, receiver.url, 'migration_job.cancelled');
    await stage(t, tenant);
    const [event] = await eventsOf(t, tenant, 1);
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    const deps = { db, queue: t.queue, retryBaseMs: 3_600_000, allowPrivateNetworks: true, clock: t.clock, agents, logger: { warn() {} } };
    const batch = deliverBatch(deps, [kept, deleted].map((endpoint) => ({ endpoint_id: endpoint.webhook, event_id: Number(event.id), attempt: 1 })));
    await receiver.waitFor(2);
    return { receiver, kept, deleted, event: event!, batch };
  }

  test('an endpoint deleted while its delivery is in flight: the batch still ends, and the other endpoints\' attempts are logged', async () => {
    const { receiver, kept, deleted, event, batch } = await batchToTwoHeldEndpoints();
    await deleteWebhook(db, deleted.webhook);
    receiver.release();
    // Both attempts reached the receiver and were answered 200: both were delivered, though only
    // the endpoint that still exists keeps a log of it.
    assert.deepEqual(await batch, ['delivered', 'delivered']);
    const [log] = await deliveriesOf(kept.webhook, 1);
    assert.deepEqual([log!.event, log!.attempt, log!.status_code], [event.id, 1, 200]);
    // Its time is when the attempt was made, before the receiver had it, not when the batch was logged.
    const arrived = Math.min(...receiver.received.map((r) => r.at));
    assert.ok(Date.parse(log!.at) <= arrived, `logged at ${log!.at}, received at ${new Date(arrived).toISOString()}`);
    const orphans = await sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ${deleted.webhook}`.execute(db);
    assert.equal(orphans.rows[0]!.n, 0);
  });

  test('an endpoint whose deletion commits while its attempt is being logged: the log skips it instead of failing the batch', { skip: PG_ONLY }, async () => {
    const deleter = await pgSession(t.config.databaseUrl);
    const deleterPid: number = (await deleter.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    try {
      const { receiver, kept, deleted, event, batch } = await batchToTwoHeldEndpoints();
      // The deletion is made but not committed when the log is written: the log waits for it.
      await deleter.query('BEGIN');
      await deleter.query('DELETE FROM webhook_endpoints WHERE id = $1', [deleted.webhook]);
      receiver.release();
      // Other test files share this database: only a session held up by this one's deletion counts.
      // The look is taken outside the deleter's transaction: a transaction sees pg_stat_activity as
      // it was at its first look, so polling from inside it would never see the log start to wait.
      await waitUntil(async () => {
        const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE ${deleterPid}::int = ANY(pg_blocking_pids(pid)) AND query LIKE '%INSERT INTO webhook_deliveries%'`.execute(db);
        return rows[0]!.n === 1;
      }, 'the log waits for the deletion');
      await deleter.query('COMMIT');
      assert.deepEqual(await batch, ['delivered', 'delivered']);
      assert.deepEqual((await deliveriesOf(kept.webhook, 1)).map((r) => [r.event, r.attempt, r.status_code]), [[event.id, 1, 200]]);
    } finally {
      await deleter.query('ROLLBACK').catch(() => {});
      await deleter.end();
    }
  });
});

describe('SSRF: private addresses are refused unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true', () => {
  test('a delivery to 127.0.0.1 and to localhost is refused, logged with the reason, and nothing is sent', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    // A filter that matches nothing this test records, so the app's own workers (flag on) leave
    // these endpoints alone; the attempts are made here with the flag off.
    const byIp = await createWebhook(db, tenant.organisation, receiver.url, 'migration_job.cancelled');
    const byName = await createWebhook(db, tenant.organisation, `http://localhost:${receiver.port}/hook`, 'migration_job.cancelled');
    await stage(t, tenant);
    const [event] = await eventsOf(t, tenant, 1);
    // The retry is scheduled an hour away: it must not run during the test. It is due an hour after
    // the attempt by the app's clock, stopped here so the time can be compared exactly.
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    const deps = { db, queue: t.queue, retryBaseMs: 3_600_000, allowPrivateNetworks: false, clock: t.clock, agents, logger: { warn() {} } };
    const attemptAt = new Date(Date.now() + 60_000);
    try {
      t.clock.set(attemptAt);
      assert.equal(await deliverOnce(deps, { endpoint_id: byIp.webhook, event_id: Number(event.id), attempt: 1 }), 'retry_scheduled');
      assert.equal(await deliverOnce(deps, { endpoint_id: byName.webhook, event_id: Number(event.id), attempt: 1 }), 'retry_scheduled');
    } finally {
      t.clock.reset();
    }
    const retries = await sql<{ start_after: Date }>`SELECT start_after FROM pgboss.job WHERE name = 'webhook_delivery'
      AND data->>'endpoint_id' IN (${byIp.webhook}, ${byName.webhook}) AND (data->>'attempt')::int = 2`.execute(db);
    assert.deepEqual(retries.rows.map((row) => new Date(row.start_after).getTime()), [1, 2].map(() => attemptAt.getTime() + 3_600_000));
    assert.equal(receiver.received.length, 0);
    const reason = 'is a loopback address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it';
    assert.deepEqual((await deliveriesOf(byIp.webhook, 1)).map((r) => [r.event, r.attempt, r.status_code, r.error]),
      [[event.id, 1, null, `refused: 127.0.0.1 ${reason}`]]);
    const named = await deliveriesOf(byName.webhook, 1);
    assert.equal(named.length, 1);
    // localhost may resolve to ::1 or 127.0.0.1 first, depending on the host's resolver.
    assert.match(named[0]!.error!, new RegExp(`^refused: localhost \\((127\\.0\\.0\\.1|::1)\\) ${reason}$`));
    assert.deepEqual([named[0]!.attempt, named[0]!.status_code], [1, null]);
    // Running the same attempt again (a job replayed after a crash) neither sends nor logs twice.
    await deliverOnce(deps, { endpoint_id: byIp.webhook, event_id: Number(event.id), attempt: 1 });
    assert.equal((await webhookDeliveries(db, byIp.webhook, 100)).deliveries.length, 1);
  });

  test('the address rule: loopback, private, link-local, unspecified, multicast, mapped IPv4; public passes', () => {
    const cases: Array<[string, string | null]> = [
      ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['::1', 'loopback'], ['::ffff:127.0.0.1', 'loopback'],
      ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'], ['fc00::1', 'private'], ['fd12::1', 'private'],
      ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'],
      ['0.0.0.0', 'unspecified'], ['::', 'unspecified'], ['100.64.0.1', 'shared (carrier-grade NAT)'], ['224.0.0.1', 'multicast'], ['ff02::1', 'multicast'],
      ['::ffff:10.0.0.1', 'private'],
      ['8.8.8.8', null], ['172.32.0.1', null], ['2001:4860:4860::8888', null], ['::ffff:8.8.8.8', null],
    ];
    assert.deepEqual(cases.map(([address]) => [address, blockedReason(address)]), cases);
  });
  test('the address rule: IPv6 forms embedding an IPv4 address take its reason; documentation, discard-only and reserved ranges', () => {
    const cases: Array<[string, string | null]> = [
      // NAT64 64:ff9b::/96, its last 32 bits.
      ['64:ff9b::a9fe:a9fe', 'link-local'], ['64:ff9b::169.254.169.254', 'link-local'], ['64:ff9b::7f00:1', 'loopback'], ['64:ff9b::a00:1', 'private'],
      ['64:ff9b::c000:201', 'documentation'], ['64:ff9b::808:808', null], ['64:ff9b:0:0:0:1:7f00:1', null],
      // 6to4 2002::/16, bits 16–47.
      ['2002:7f00:1::', 'loopback'], ['2002:a9fe:a9fe::', 'link-local'], ['2002:c0a8:101::1', 'private'], ['2002:808:808::', null],
      // IPv4-compatible ::/96 (:: and ::1 keep their own reasons).
      ['::127.0.0.1', 'loopback'], ['::7f00:1', 'loopback'], ['::a9fe:a9fe', 'link-local'], ['::', 'unspecified'], ['::1', 'loopback'], ['::8.8.8.8', null],
      // IPv4-translated ::ffff:0:0:0/96 and IPv4-mapped ::ffff:0:0/96.
      ['::ffff:0:7f00:1', 'loopback'], ['::ffff:0:a9fe:a9fe', 'link-local'], ['::ffff:0:808:808', null],
      ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['::ffff:a9fe:a9fe', 'link-local'], ['::ffff:8.8.8.8', null],
      // Local-use NAT64, documentation, discard-only, IETF protocol assignments (Teredo among them).
      ['192.0.2.1', 'documentation'], ['198.51.100.255', 'documentation'], ['203.0.113.9', 'documentation'], ['2001:db8::1', 'documentation'],
      ['64:ff9b:1::a9fe:a9fe', 'local-use NAT64'], ['64:ff9b:1:ffff::1', 'local-use NAT64'], ['64:ff9b:2::1', null],
      ['100::1', 'discard-only'], ['100::ffff:0:0:1', 'discard-only'], ['2001::1', 'reserved'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], ['2001:1ff::1', 'reserved'],
      ['192.0.3.1', null], ['198.51.101.1', null], ['203.0.114.1', null], ['2001:db9::1', null], ['100:0:0:1::1', null], ['2001:200::1', null],
      // A zone does not hide the address.
      ['fe80::1%eth0', 'link-local'],
    ];
    assert.deepEqual(cases.map(([address]) => [address, blockedReason(address)]), cases);
  });

  test('at delivery, an IP literal embedding a blocked IPv4 is refused before connecting; the reason reads "an" before a vowel', async () => {
    const receiver = await startReceiver();
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    const refused = (which: string, kind: string) => `refused: ${which} is ${kind} address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it`;
    const cases: Array<[string, string]> = [
      [`http://[64:ff9b::7f00:1]:${receiver.port}/hook`, refused('64:ff9b::7f00:1', 'a loopback')],
      [`http://[2002:7f00:1::]:${receiver.port}/hook`, refused('2002:7f00:1::', 'a loopback')],
      [`http://[::ffff:0:7f00:1]:${receiver.port}/hook`, refused('::ffff:0:7f00:1', 'a loopback')],
      [`http://[::127.0.0.1]:${receiver.port}/hook`, refused('::7f00:1', 'a loopback')],
      [`http://0.0.0.0:${receiver.port}/hook`, refused('0.0.0.0', 'an unspecified')],
    ];
    for (const [url, error] of cases) {
      const { latencyMs: _latency, ...result } = await postWebhook(url, '{}', { 'content-type': 'application/json' }, { allowPrivateNetworks: false, agents, timeoutMs: 2000 });
      assert.deepEqual(result, { status: null, error, refused: true }, url);
    }
    assert.equal(receiver.received.length, 0, 'nothing was sent');
  });

  test('import-admin\'s URL rule refuses port 0, like ports above 65535', async () => {
    const tenant = await createTenant(t);
    await assert.rejects(createWebhook(db, tenant.organisation, 'http://example.com:0/'),
      { code: 'invalid', detail: 'must have a port from 1 to 65535 (or none), got "http://example.com:0/"' });
    await assert.rejects(createWebhook(db, tenant.organisation, 'http://example.com:65536/'),
      { code: 'invalid', detail: 'must be an absolute http or https URL, got "http://example.com:65536/"' });
    assert.deepEqual((await listWebhooks(db, tenant.organisation)).webhooks, []);
  });
});

describe('retry schedule and retention', () => {
  test('the default schedule: 9 attempts, 4 times further apart, the last over 24 hours after the first', () => {
    const delays = Array.from({ length: MAX_ATTEMPTS - 1 }, (_, i) => retryDelayMs(i + 1, 5000) / 1000);
    assert.deepEqual(delays, [5, 20, 80, 320, 1280, 5120, 20480, 81920]);
    assert.ok(delays.reduce((a, b) => a + b) > 24 * 3600);
  });

  test('retention deletes events and delivery log rows older than the retention period, keeps the rest', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const receiver = await startReceiver();
    const hook = await webhookFor(tenant, receiver, 'migration_job.cancelled');
    const now = new Date();
    const daysAgo = (d: number) => new Date(now.getTime() - d * 24 * 3600 * 1000);
    const ids = await db.insertInto('events').values([31, 29].map((d) => ({
      supplier_id: supplierId, type: 'import_process.staged', external_account_number: `RET-${d}`, data: '{}', created_at: daysAgo(d),
    }))).returning('id').execute();
    await db.insertInto('webhook_deliveries').values([31, 29].map((d, i) => ({
      endpoint_id: hook.webhook, event_id: ids[i]!.id, event_type: 'import_process.staged', attempt: 1, status_code: 200, latency_ms: 5, error: null, at: daysAgo(d),
    }))).execute();
    const removed = await runRetention(db, 30, now);
    assert.ok(removed.events >= 1 && removed.deliveries >= 1, JSON.stringify(removed));
    const events = await db.selectFrom('events').select('external_account_number').where('supplier_id', '=', supplierId).orderBy('id').execute();
    assert.deepEqual(events, [{ external_account_number: 'RET-29' }]);
    const log = await db.selectFrom('webhook_deliveries').select('event_id').where('endpoint_id', '=', hook.webhook).execute();
    assert.deepEqual(log, [{ event_id: ids[1]!.id }]);
  });
});
