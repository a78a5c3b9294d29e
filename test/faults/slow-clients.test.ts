import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { request } from '../support/server-process.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';
import { ROUTES } from './fixtures.ts';

// Slow and hostile clients over a real socket: headers or a body sent a byte at a time are cut
// off by the server's time-outs (REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS, made short here), and a
// slowloris holding many sockets open does not keep other clients waiting.
const REQUEST_TIMEOUT_MS = 1_500;
const HEADERS_TIMEOUT_MS = 1_000;
const t = await buildTestApp({ REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), CONNECTION_TIMEOUT_MS: '5000' });
const tenant = await createTenant(t);
await t.app.listen({ host: '127.0.0.1', port: 0 });
const { port } = t.app.server.address() as { port: number };
const base = `http://127.0.0.1:${port}`;

interface Drip { socket: Socket; closed: Promise<{ ms: number; response: string }> }

/** A raw client: writes `head` at once, then `drip` every `everyMs` until the server hangs up. */
function drip(head: string, dripText: string, everyMs = 100): Drip {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  let response = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => { response += chunk; });
  socket.on('error', () => {});
  socket.write(head);
  const timer = setInterval(() => { if (!socket.destroyed && socket.writable) socket.write(dripText); }, everyMs);
  const closed = new Promise<{ ms: number; response: string }>((resolve) => {
    socket.on('close', () => { clearInterval(timer); resolve({ ms: Date.now() - started, response }); });
  });
  return { socket, closed };
}

/** Resolves with the outcome, or rejects if the socket is still open after `ms`: a hang. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms); });
  try { return await Promise.race([promise, limit]); } finally { clearTimeout(timer); }
}

const statusLine = (response: string) => response.split('\r\n')[0] ?? '';
const jsonOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

describe('slow clients are cut off by the time-outs', () => {
  test('headers sent a line at a time, never finished: 408 and closed after the headers time-out', async () => {
    const client = drip(`POST ${ROUTES.validate} HTTP/1.1\r\nHost: x\r\n`, 'X-Slow: 1\r\n');
    const { ms, response } = await within(client.closed, HEADERS_TIMEOUT_MS + 3_000, 'slow headers');
    assert.ok(ms >= HEADERS_TIMEOUT_MS - 100, `cut off after ${ms} ms, not before the time-out`);
    assert.match(statusLine(response), /^HTTP\/1\.1 408/);
  });

  test('a body sent a byte at a time: 408 and closed after the request time-out', async () => {
    const head = `POST ${ROUTES.validate} HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${tenant.token}\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{`;
    const client = drip(head, ' ');
    const { ms, response } = await within(client.closed, REQUEST_TIMEOUT_MS + 3_000, 'slow body');
    assert.ok(ms >= REQUEST_TIMEOUT_MS - 100, `cut off after ${ms} ms`);
    assert.match(statusLine(response), /^HTTP\/1\.1 408/);
  });

  test('a connection that sends nothing is closed', async () => {
    const client = drip('', '', 60_000);
    await within(client.closed, REQUEST_TIMEOUT_MS + 5_000, 'idle connection');
  });

  test('a slowloris of 150 sockets does not keep other clients waiting, and its sockets are all closed', async () => {
    const loris = Array.from({ length: 150 }, (_, i) => drip(`GET /healthz HTTP/1.1\r\nHost: x\r\n`, `X-Loris-${i}: 1\r\n`, 200));
    let firstLorisClosed = Infinity;
    void Promise.race(loris.map((l) => l.closed)).then(() => { firstLorisClosed = Date.now(); });
    const answers = [];
    for (let i = 0; i < 5; i += 1) {
      answers.push({ ...(await request(base, 'GET', '/readyz', { timeoutMs: 5_000 })), at: Date.now() });
      answers.push({ ...(await request(base, 'GET', ROUTES.all(tenant.supplier), { token: tenant.token, timeoutMs: 5_000 })), at: Date.now() });
    }
    for (const answer of answers) assert.equal(answer.status, 200, answer.text);
    // Served while the slowloris still held its sockets: its sockets do not queue other clients.
    assert.ok(answers[0]!.at < firstLorisClosed, 'the first answer came while every slowloris socket was still open');
    const closed = await within(Promise.all(loris.map((l) => l.closed)), HEADERS_TIMEOUT_MS + 4_000, 'slowloris sockets');
    assert.equal(closed.length, 150);
  });

  test('a chunked body that grows past the size limit is refused with a JSON 413', async () => {
    const socket = connect(port, '127.0.0.1');
    let response = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => { response += chunk; });
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(`POST ${ROUTES.validate} HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${tenant.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`);
    const chunk = ' '.repeat(64 * 1024);
    for (let sent = 0; sent <= t.config.bodyLimitBytes + chunk.length && !socket.destroyed; sent += chunk.length) {
      socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await within(closed, 5_000, 'oversized chunked body');
    assert.match(statusLine(response), /^HTTP\/1\.1 413/);
    assert.equal(jsonOf(response).code, 'payload_too_large');
  });
});

// Answers node's http server writes itself, before Fastify has a request (a header block too big,
// a time-out, a malformed request line), go through handleClientError in the D4 shape.

describe('socket-level client errors', () => {
  test('a header block over 16 KiB is a 431 and the connection is closed', async () => {
    const client = drip(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, '', 60_000);
    const { response } = await within(client.closed, 3_000, 'oversized headers');
    assert.match(statusLine(response), /^HTTP\/1\.1 431/);
    assert.doesNotThrow(() => jsonOf(response));
  });

  test('an Expect header other than 100-continue is a 417 in the error body, and the connection is closed', async () => {
    const client = drip(`POST ${ROUTES.validate} HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`, '', 60_000);
    const { response } = await within(client.closed, 3_000, 'an unmet expectation');
    assert.match(statusLine(response), /^HTTP\/1\.1 417/);
    assert.deepEqual(jsonOf(response), { detail: 'Only "Expect: 100-continue" is supported; send the request without this Expect header.', code: 'expectation_failed' });
  });

  test('CONNECT (a proxy tunnel) is a 405 in the error body, not a socket closed without a word', async () => {
    const client = drip('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', '', 60_000);
    const { response } = await within(client.closed, 3_000, 'a tunnel request');
    assert.match(statusLine(response), /^HTTP\/1\.1 405/);
    assert.deepEqual(jsonOf(response), { detail: 'Method "CONNECT" not allowed: the service is not a proxy.', code: 'method_not_allowed' });
  });

  test('they carry the D4 body {detail, code}', async () => {
    for (const raw of [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 'NOT HTTP AT ALL\r\n\r\n']) {
      const client = drip(raw, '', 60_000);
      const { response } = await within(client.closed, 3_000, 'client error');
      const body = jsonOf(response);
      assert.equal(typeof body.detail, 'string', response);
      assert.equal(typeof body.code, 'string', response);
    }
  });
});
