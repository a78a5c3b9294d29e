import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { cpuSeconds, startServer } from '../lib/proc.ts';

// The floor of a webhook delivery on this machine: the CPU that one bare HTTP POST of an event-sized
// body costs its sender and its receiver, over a kept-alive connection, signed as a delivery is and
// with nothing else (no queue, no database, no log). The events row of `npm run bench` compares
// staging with a webhook endpoint against staging without; on a machine where the receiver shares
// the cores with the service and PostgreSQL, a delivery can cost no less than this.
//
// Usage: node --import tsx bench/experiments/bare-post-cost.ts [posts=20000] [concurrency=32]

const posts = Number(process.argv[2] ?? 20_000);
const concurrency = Number(process.argv[3] ?? 32);
// The events row's own receiver: answers 200 at once and counts.
const receiver = await startServer({
  name: 'webhook-receiver', script: 'bench/baselines/webhook-receiver.ts', env: {}, logDir: mkdtempSync(join(tmpdir(), 'bare-post-')), readyPath: '/count',
});
const { hostname, port } = new URL(receiver.url);
const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
const webhook = new Webhook(`whsec_${Buffer.from('bench-secret-bench-secret-32byte').toString('base64')}`);
// An import_process.staged event as the service sends it.
const event = (id: number) => JSON.stringify({
  id, type: 'import_process.staged', created_at: new Date().toISOString(), import_supplier: 'BENCH',
  external_account_number: `E1-${id}`, data: { first_staging: true },
});
const post = (id: number) => new Promise<void>((resolve, reject) => {
  const body = event(id);
  const now = new Date();
  const req = request({
    host: hostname, port, path: '/hook', method: 'POST', agent,
    headers: {
      'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'webhook-id': String(id),
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': webhook.sign(String(id), now, body),
    },
  }, (res) => { res.resume(); res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)))); });
  req.on('error', reject);
  req.end(body);
});
const run = async (count: number) => {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => { while (next < count) await post(next++); }));
};
const senderMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000; };
const receiverMs = () => cpuSeconds(receiver.pid) * 1000;
try {
  await run(2_000); // warm-up
  const [sender0, receiver0, started] = [senderMs(), receiverMs(), performance.now()];
  await run(posts);
  const [sender, received, seconds] = [senderMs() - sender0, receiverMs() - receiver0, (performance.now() - started) / 1000];
  const per = (ms: number) => (ms / posts).toFixed(3);
  console.log(`${posts} POSTs, ${concurrency} at a time, ${(posts / seconds).toFixed(0)}/s: sender ${per(sender)} CPU ms a POST `
    + `(signing included), receiver ${per(received)}, together ${per(sender + received)}`);
} finally {
  agent.destroy();
  await receiver.stop();
}
