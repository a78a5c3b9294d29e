import { fork } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

// The floor of a webhook delivery on this machine: the CPU that one bare HTTP POST of an event-sized
// body costs its sender and its receiver, over a kept-alive connection, signed as a delivery is and
// with nothing else (no queue, no database, no log). The events row of `npm run bench` compares
// staging with a webhook endpoint against staging without; on a machine where the receiver shares
// the cores with the service and PostgreSQL, a delivery can cost no less than this.
//
// Usage: node --import tsx bench/experiments/bare-post-cost.ts [posts=20000] [concurrency=32]

if (process.argv[2] === 'receiver') {
  // The bench's receiver (bench/baselines/webhook-receiver.ts): answer 200 at once, count.
  let received = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') return void res.end(JSON.stringify({ received, cpuMs: cpuMs() }));
    req.resume();
    req.on('end', () => { received += 1; res.writeHead(200, { 'content-type': 'application/json' }).end('{}'); });
  });
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
} else {
  const posts = Number(process.argv[2] ?? 20_000);
  const concurrency = Number(process.argv[3] ?? 32);
  const child = fork(new URL(import.meta.url).pathname, ['receiver'], { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
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
      host: '127.0.0.1', port, path: '/hook', method: 'POST', agent,
      headers: {
        'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'webhook-id': String(id),
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': webhook.sign(String(id), now, body),
      },
    }, (res) => { res.resume(); res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)))); });
    req.on('error', reject);
    req.end(body);
  });
  const receiverCpu = async () => (await (await fetch(`http://127.0.0.1:${port}/`)).json() as { cpuMs: number }).cpuMs;
  const run = async (count: number) => {
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => { while (next < count) await post(next++); }));
  };
  await run(2_000); // warm-up
  const [senderBefore, receiverBefore, started] = [cpuMs(), await receiverCpu(), performance.now()];
  await run(posts);
  const [senderMs, receiverMs, seconds] = [cpuMs() - senderBefore, (await receiverCpu()) - receiverBefore, (performance.now() - started) / 1000];
  child.kill();
  agent.destroy();
  const per = (ms: number) => (ms / posts).toFixed(3);
  console.log(`${posts} POSTs, ${concurrency} at a time, ${(posts / seconds).toFixed(0)}/s: sender ${per(senderMs)} CPU ms a POST `
    + `(signing included), receiver ${per(receiverMs)}, together ${per(senderMs + receiverMs)}`);
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
