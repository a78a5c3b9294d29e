import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import * as webhooks from '../../src/modules/webhooks/webhooks.service.ts';
import { accountTemplates, loadPayloadFactory } from '../lib/account-payload.ts';
import { cpuSeconds, startServer, type Server } from '../lib/proc.ts';
import { dropDatabases, freshTarget, provision, serviceEnv } from '../lib/setup.ts';
import { V1 } from '../scenarios/context.ts';

// The service's own CPU per delivered webhook event, at a fixed request rate (the events row of
// `npm run bench` loads the service as hard as it goes, so its batches, and its noise, follow the
// machine's load). Rounds alternate: N stage requests without a webhook endpoint, then N with one
// (until the receiver has every event); the cost of a delivery is the CPU the second adds, over the
// deliveries. The same service process serves both sides, so its idle polling cancels out.
//
// Usage: node --import tsx bench/experiments/delivery-cost.ts [requests=2000] [rate=200] [rounds=3]
//   DELIVERY_PROF_DIR=dir: the service runs with --cpu-prof into dir (bench/profile-summary.ts reads it).

const requests = Number(process.argv[2] ?? 2000);
const rate = Number(process.argv[3] ?? 200);
const rounds = Number(process.argv[4] ?? 3);
const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const STAGE = `${V1}/account-import-process/create-or-update/`;
const logDir = mkdtempSync(join(tmpdir(), 'delivery-cost-'));
const name = `delivery_cost_${process.pid}`;

const target = await freshTarget('postgres', adminUrl, name);
const tenant = await provision(target);
const receiver = await startServer({ name: 'webhook-receiver', script: 'bench/baselines/webhook-receiver.ts', env: {}, logDir, readyPath: '/count' });
const service: Server = await startServer({
  name: 'service', script: 'src/main.ts', logDir, readyPath: '/readyz', cpuProfileDir: process.env.DELIVERY_PROF_DIR,
  env: { ...serviceEnv(target, 'warn'), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
});
const store = await target.open();
const { factory } = await loadPayloadFactory();
const received = async () => ((await (await fetch(`${receiver.url}/count`)).json()) as { received: number }).received;
const clock = () => new Date().toISOString().slice(11, 19);
const cpuMs = () => cpuSeconds(service.pid) * 1000;

/** N stage requests of new accounts at `rate` a second, 16 at a time at most. */
async function stage(prefix: string): Promise<void> {
  const templates = accountTemplates(factory, tenant.supplier, prefix, 20);
  const started = performance.now();
  let next = 0;
  const one = async () => {
    for (;;) {
      const n = next++;
      if (n >= requests) return;
      const due = started + (n * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const res = await fetch(`${service.url}${STAGE}`, {
        method: 'POST', body: templates[n % templates.length]!.join(String(n)),
        headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json' },
      });
      await res.arrayBuffer();
      if (res.status >= 300) throw new Error(`stage answered ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, one));
}

const maxEventId = async () => Number((await sql<{ id: string }>`SELECT coalesce(max(id), 0) AS id FROM events`.execute(store.db)).rows[0]!.id);
const eventsAfter = async (id: number) => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE id > ${id}`.execute(store.db)).rows[0]!.n);

try {
  await stage('W'); // warm-up, no endpoint
  for (let round = 1; round <= rounds; round += 1) {
    let cpu = cpuMs();
    const offFrom = clock();
    await stage(`A${round}`);
    await sleep(1000);
    const offMs = cpuMs() - cpu;

    const endpoint = (await webhooks.createWebhook(store.db, 'bench-org', `${receiver.url}/hook`)).webhook;
    // The service trusts its "no endpoint" lookup for 5 s (webhook-fanout.ts).
    await sleep(5500);
    const from = await maxEventId();
    const before = await received();
    cpu = cpuMs();
    const onFrom = clock();
    await stage(`B${round}`);
    const expected = await eventsAfter(from);
    const deadline = Date.now() + 120_000;
    while ((await received()) - before < expected && Date.now() < deadline) await sleep(50);
    await sleep(1000);
    const onMs = cpuMs() - cpu;
    const deliveries = (await received()) - before;
    await webhooks.deleteWebhook(store.db, endpoint);
    console.log(`round ${round} (without from ${offFrom}, with from ${onFrom} to ${clock()}): without ${(offMs / requests).toFixed(3)} CPU ms/req; with ${(onMs / requests).toFixed(3)}; `
      + `${deliveries} deliveries of ${expected} events; ${((onMs - offMs) / deliveries).toFixed(3)} CPU ms per delivery`);
    await sleep(5500);
  }
} finally {
  await store.close();
  await service.stop();
  await receiver.stop();
  await dropDatabases(adminUrl, [name]);
}
