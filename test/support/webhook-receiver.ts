import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

// A webhook receiver on 127.0.0.1 for tests: records every request and answers what the test says
// (a status per request, in order, then `then`; or 'hang' to keep the request open until released),
// and can go down (connections refused) and come back on the same port.

export interface Received { path: string; headers: IncomingHttpHeaders; body: string; answer: Answer; /** Date.now() when it arrived. */ at: number }
export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Answers for the next requests, in order; after them every request gets `then` (default 200). */
  answers: Answer[];
  then: Answer;
  /** Waits this long before answering (keeps deliveries in flight). */
  delayMs: number;
  /** Answers 200 to every hanging request. */
  release(): void;
  /** Resolves once `count` requests arrived (rejects after timeoutMs). */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  /** Stops listening (connections are refused) until up() listens again on the same port. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(answers: Answer[] = [], then: Answer = 200): Promise<Receiver> {
  const hanging: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '', port: 0, received: [], answers: [...answers], then, delayMs: 0,
    release() {
      for (const res of hanging.splice(0)) res.writeHead(200).end();
    },
    async waitFor(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (receiver.received.length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${receiver.received.length} of ${count} requests: ${JSON.stringify(receiver.received.map((r) => r.body))}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return receiver.received;
    },
    down: async () => {
      receiver.release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
    up: () => new Promise<void>((resolve) => server.listen(receiver.port, '127.0.0.1', resolve)),
    close: () => receiver.down(),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = receiver.answers.length > 0 ? receiver.answers.shift()! : receiver.then;
      receiver.received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answer, at: Date.now() });
      if (answer === 'hang') return void hanging.push(res);
      if (answer >= 300 && answer < 400) res.setHeader('location', `http://127.0.0.1:${receiver.port}/elsewhere`);
      setTimeout(() => res.writeHead(answer).end(), receiver.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hook`;
  after(() => receiver.close());
  return receiver;
}
