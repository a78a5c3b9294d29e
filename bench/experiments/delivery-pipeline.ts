import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { systemClock } from '../../src/core/clock.ts';
import type { NewEvent } from '../../src/modules/events/index.ts';
import { createWebhookFanout, defineWebhookQueues, startWebhookWorkers } from '../../src/modules/webhooks/index.ts';
import * as webhooks from '../../src/modules/webhooks/webhooks.service.ts';
import { createJobQueue } from '../../src/queue/queue.ts';
import { startServer } from '../lib/proc.ts';
import { dropDatabases, freshTarget, provision } from '../lib/setup.ts';

// Where a delivered webhook event's CPU goes, in this one process (no HTTP requests to serve, so
// nothing else to subtract): the fan-out and the delivery, each measured on its own by
// process.cpuUsage over N events written at a fixed rate, each event by one INSERT of its own.
//   1. without an endpoint: what a write without webhooks costs;
//   2. with one: the same statements, which now also wake the fan-out (the events table's trigger,
//      PostgreSQL's work, not this process's), the fan-out worker running (delivery workers off, so
//      the delivery jobs wait);
//   3. the delivery workers started, until the receiver (another process) has every event.
// The idle process's CPU a second (queue polling) is measured first and taken off each phase.
//
// Usage: node --import tsx bench/experiments/delivery-pipeline.ts [events=3000] [rate=300] [writers=8]

const total = Number(process.argv[2] ?? 3000);
const rate = Number(process.argv[3] ?? 300);
const writers = Number(process.argv[4] ?? 8);
const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `delivery_pipeline_${process.pid}`;
const logDir = mkdtempSync(join(tmpdir(), 'delivery-pipeline-'));

const target = await freshTarget('postgres', adminUrl, name);
const tenant = await provision(target);
const receiver = await startServer({ name: 'webhook-receiver', script: 'bench/baselines/webhook-receiver.ts', env: {}, logDir, readyPath: '/count' });
const received = async () => ((await (await fetch(`${receiver.url}/count`)).json()) as { received: number }).received;
const store = await target.open();
const { db } = store;
const config = loadConfig({ ...process.env, DATABASE_URL: target.env.DATABASE_URL, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TOKEN_SECRET: 'x'.repeat(40) });
const queue = createJobQueue(store, { maintenanceIntervalSeconds: 60 });
await queue.start();
await defineWebhookQueues(queue);
const fanout = createWebhookFanout({ db, queue });
const quiet = { info: () => {}, warn: (obj: object, msg: string) => console.warn(msg, obj) };
const cpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const event = (n: number): NewEvent => ({ supplierId: tenant.supplierId, type: 'import_process.staged', externalAccountNumber: `P-${n}`, data: { first_staging: true } });

/** `total` events at `rate` a second by `writers` at once; `write` records one. */
async function write(prefix: number, record: (n: number) => Promise<void>): Promise<void> {
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: writers }, async () => {
    for (let n = next++; n < total; n = next++) {
      const wait = started + (n * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
      await record(prefix + n);
    }
  }));
}
const single = (n: number) => sql`INSERT INTO events (supplier_id, type, external_account_number, data)
  VALUES (${event(n).supplierId}, 'import_process.staged', ${event(n).externalAccountNumber}, '{"first_staging":true}')`.execute(db).then(() => undefined);
const deliveryJobs = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM pgboss.job WHERE name = 'webhook_delivery'`.execute(db)).rows[0]!.n);

/** CPU ms of `work`, less the idle rate over its duration. */
async function measure(idlePerSecond: number, work: () => Promise<void>): Promise<{ cpu: number; seconds: number }> {
  const [cpu0, t0] = [cpuMs(), performance.now()];
  await work();
  const seconds = (performance.now() - t0) / 1000;
  return { cpu: cpuMs() - cpu0 - idlePerSecond * seconds, seconds };
}

let stopWorkers: (() => Promise<void>) | undefined;
try {
  await write(0, single); // warm-up
  await fanout.handler()(); // the cursor past the warm-up
  const idle = await measure(0, () => sleep(3000));
  const idlePerSecond = idle.cpu / idle.seconds;
  const base = await measure(idlePerSecond, () => write(1_000_000, single));
  const { webhook } = await webhooks.createWebhook(db, 'bench-org', `${receiver.url}/hook`);
  // Only the fan-out's worker: the delivery jobs wait.
  await queue.work('webhook_fanout', { concurrency: 1, pollingIntervalSeconds: 0.5 }, fanout.handler());
  const jobsBefore = await deliveryJobs();
  const triggered = await measure(idlePerSecond, async () => {
    await write(2_000_000, single);
    while ((await deliveryJobs()) - jobsBefore < total) await sleep(50);
  });
  await queue.offWork('webhook_fanout');
  const before = await received();
  console.log(`delivery phase from ${new Date().toISOString().slice(11, 19)}`);
  const delivered = await measure(idlePerSecond, async () => {
    const workers = await startWebhookWorkers({ db, queue, config, logger: quiet, clock: systemClock, fanout });
    stopWorkers = () => workers.stop();
    while ((await received()) - before < total) await sleep(200);
  });
  const per = (ms: number) => (ms / total).toFixed(3);
  console.log(`${total} events at ${rate}/s, ${writers} writers; idle ${idlePerSecond.toFixed(1)} CPU ms/s taken off each phase`);
  console.log(`  an INSERT, no endpoint:              ${per(base.cpu)} CPU ms an event`);
  console.log(`  an INSERT with one, and the fan-out: ${per(triggered.cpu)} (+${per(triggered.cpu - base.cpu)})`);
  console.log(`  delivery (${delivered.seconds.toFixed(1)} s):                  ${per(delivered.cpu)}`);
  console.log(`  what the endpoint adds an event:     ${per(triggered.cpu - base.cpu + delivered.cpu)}`);
  await stopWorkers?.();
  stopWorkers = undefined;
  await webhooks.deleteWebhook(db, webhook);
} finally {
  await stopWorkers?.();
  await queue.stop(1000);
  await store.close();
  await receiver.stop();
  await dropDatabases(adminUrl, [name]);
}
