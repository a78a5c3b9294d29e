import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';
import { ROUTES } from './fixtures.ts';

// The records upload of a migration job over a real socket, with short limits: it is exempt from the
// whole-request deadline (REQUEST_TIMEOUT_MS), so a file trickling in for longer than that completes,
// while a client that stops sending gets a 408 after UPLOAD_IDLE_TIMEOUT_SECONDS with its complete
// lines kept. Every other route, and the next request on the upload's own connection, keep the deadline.
const REQUEST_TIMEOUT_MS = 1_500;
const IDLE_MS = 1_000;
const t = await buildTestApp({
  REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HEADERS_TIMEOUT_MS: '1000', CONNECTION_TIMEOUT_MS: '10000',
  UPLOAD_IDLE_TIMEOUT_SECONDS: String(IDLE_MS / 1000),
});
const tenant = await createTenant(t);
await t.app.listen({ host: '127.0.0.1', port: 0 });
const { port } = t.app.server.address() as { port: number };
const JOBS = '/v1/data-import/migration-jobs/';

interface Response { status: number; headers: Record<string, string>; body: string; at: number }

/** A raw HTTP/1.1 client on one socket: writes bytes when told, parses the responses that come back. */
class RawClient {
  readonly socket: Socket;
  readonly started = Date.now();
  private buffer = '';
  private readonly waiting: Array<() => void> = [];
  readonly closed: Promise<number>;

  constructor() {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => { this.buffer += chunk; this.wake(); });
    this.socket.on('error', () => {});
    this.closed = new Promise((resolve) => this.socket.on('close', () => { this.wake(); resolve(Date.now()); }));
  }

  write(bytes: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(bytes);
  }

  /** The next whole response (Content-Length framed); rejects if the socket closes first or after `ms`. */
  async response(ms = 15_000): Promise<Response> {
    const deadline = Date.now() + ms;
    for (;;) {
      const parsed = this.take();
      if (parsed) return parsed;
      if (this.socket.destroyed) throw new Error(`closed without a whole response: ${JSON.stringify(this.buffer)}`);
      if (Date.now() > deadline) throw new Error(`no response within ${ms} ms: ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.waiting.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  private take(): Response | null {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end === -1) return null;
    const [statusLine, ...lines] = this.buffer.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    if (Buffer.byteLength(this.buffer.slice(end + 4)) < length) return null;
    const body = this.buffer.slice(end + 4, end + 4 + length);
    this.buffer = this.buffer.slice(end + 4 + length);
    return { status: Number(statusLine!.split(' ')[1]), headers, body, at: Date.now() };
  }

  private wake(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }
}

async function newJob(): Promise<string> {
  const res = await call(t.app, 'POST', JOBS, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  assert.equal(res.status, 201, res.body);
  return res.json.id as string;
}

const jobTotal = async (id: string) => (await call(t.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json.counts.total as number;

function ndjson(count: number): string {
  return Array.from({ length: count }, () => `${JSON.stringify({ account: accountPayload(tenant.supplier) })}\n`).join('');
}

function uploadHead(id: string, length: number, extra = ''): string {
  return `POST ${JOBS}${id}/records/ HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${tenant.token}\r\n`
    + `Content-Type: application/x-ndjson\r\nContent-Length: ${length}\r\n${extra}\r\n`;
}

/** Sends `body` in `pieces` slices, one every `everyMs` (the first with the headers). */
async function trickle(client: RawClient, head: string, body: Buffer, pieces: number, everyMs: number): Promise<void> {
  const size = Math.ceil(body.length / pieces);
  client.write(head);
  for (let at = 0; at < body.length; at += size) {
    client.write(body.subarray(at, at + size));
    if (at + size < body.length) await sleep(everyMs);
  }
}

describe('migration-job uploads: no whole-request deadline, an idle limit instead', () => {
  for (const gzip of [false, true]) {
    test(`an upload trickling in for longer than REQUEST_TIMEOUT_MS completes with every line${gzip ? ' (gzip)' : ''}`, async () => {
      const id = await newJob();
      const text = ndjson(12);
      const body = gzip ? gzipSync(text) : Buffer.from(text);
      const client = new RawClient();
      // 12 slices 300 ms apart: 3.3 s in all, more than twice the deadline, never idle for a second.
      await trickle(client, uploadHead(id, body.length, gzip ? 'Content-Encoding: gzip\r\n' : ''), body, 12, 300);
      const res = await client.response();
      assert.ok(res.at - client.started >= 2 * REQUEST_TIMEOUT_MS, `answered after ${res.at - client.started} ms`);
      assert.deepEqual({ status: res.status, body: JSON.parse(res.body) }, { status: 200, body: { received: 12, total_records: 12 } });
      assert.equal(await jobTotal(id), 12);

      // The exemption ends with the upload: the next request on this keep-alive connection, a body
      // sent a byte at a time to another route, is cut off at REQUEST_TIMEOUT_MS as usual.
      const before = Date.now();
      client.write(`POST ${ROUTES.validate} HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${tenant.token}\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{`);
      const dripping = setInterval(() => client.write(' '), 100);
      try {
        const next = await client.response(REQUEST_TIMEOUT_MS + 3_000);
        assert.equal(next.status, 408, next.body);
        assert.ok(next.at - before >= REQUEST_TIMEOUT_MS - 100, `cut off after ${next.at - before} ms`);
        assert.deepEqual(JSON.parse(next.body), { detail: 'The request was not received in time.', code: 'request_timeout' });
      } finally {
        clearInterval(dripping);
      }
    });
  }

  test('an upload that stops sending: 408 after the idle limit, its complete lines kept, the connection closed', async () => {
    const id = await newJob();
    const client = new RawClient();
    // Three whole lines and half of a fourth, then nothing (the promised length is never reached).
    const lines = ndjson(4);
    const cut = lines.length - 40;
    client.write(uploadHead(id, Buffer.byteLength(lines) + 1000) + lines.slice(0, cut));
    const lastByte = Date.now();
    const res = await client.response(IDLE_MS + 5_000);
    const waited = res.at - lastByte;
    assert.ok(waited >= IDLE_MS - 50 && waited < IDLE_MS + 3_000, `answered ${waited} ms after the last byte`);
    assert.deepEqual({ status: res.status, connection: res.headers.connection, body: JSON.parse(res.body) }, {
      status: 408, connection: 'close',
      body: {
        detail: 'No data arrived for 1 s: the upload was cut off. The 3 records received before are kept; the job holds 3, send the lines after those.',
        code: 'request_timeout', received: 3, total_records: 3,
      },
    });
    await client.closed;
    assert.equal(await jobTotal(id), 3);
  });

  test('a slow but steady upload of 1,200 lines (three batches of 500) completes', async () => {
    const id = await newJob();
    const body = Buffer.from(ndjson(1_200));
    const client = new RawClient();
    await trickle(client, uploadHead(id, body.length), body, 8, 400);
    const res = await client.response(30_000);
    assert.deepEqual({ status: res.status, body: JSON.parse(res.body) }, { status: 200, body: { received: 1_200, total_records: 1_200 } });
    assert.equal(await jobTotal(id), 1_200);
  });

  test('another route keeps the whole-request deadline: a body sent a byte at a time is cut off at REQUEST_TIMEOUT_MS', async () => {
    const client = new RawClient();
    client.write(`POST ${ROUTES.validate} HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${tenant.token}\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{`);
    const dripping = setInterval(() => client.write(' '), 100);
    try {
      const res = await client.response(REQUEST_TIMEOUT_MS + 3_000);
      assert.ok(res.at - client.started >= REQUEST_TIMEOUT_MS - 100, `cut off after ${res.at - client.started} ms`);
      assert.deepEqual({ status: res.status, body: JSON.parse(res.body) },
        { status: 408, body: { detail: 'The request was not received in time.', code: 'request_timeout' } });
      await client.closed;
    } finally {
      clearInterval(dripping);
    }
  });
});
