import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { constants, createGzip, gzipSync, inflateRawSync } from 'node:zlib';
import { onPostgres, pgSession, STAGE_URL, waitUntil } from '../support/imports.ts';
import { ndjsonLines, type Line } from '../../src/modules/migration-jobs/index.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type TestApp, type Tenant } from '../support/test-app.ts';

// Records uploads (and the JSON endpoints) given input that cannot be stored or read: a line that
// cannot be kept is that line's own failed record and every other line is kept; a body that cannot
// be read is a 400 or a 413 in the error shape, never a 500.
const t = await buildTestApp();
const tenant = await createTenant(t);
const BASE = '/v1/data-import/migration-jobs/';
const VALIDATE_URL = '/v1/data-import/validate-account/';
const UNSTORABLE = 'Text must not contain NUL characters or unpaired surrogates.';
const NOT_UTF8 = 'The body is not valid UTF-8.';

async function newJob(app: TestApp = t, who: Tenant = tenant): Promise<string> {
  const res = await call(app.app, 'POST', BASE, { token: who.token, body: { import_supplier: who.supplier, operations_team_name: who.team } });
  assert.equal(res.status, 201, res.body);
  return res.json.id as string;
}

async function upload(id: string, payload: string | Buffer, headers: Record<string, string> = {}, app: TestApp = t, who: Tenant = tenant) {
  const res = await app.app.inject({ method: 'POST', url: `${BASE}${id}/records/`, payload,
    headers: { authorization: `Token ${who.token}`, 'content-type': 'application/x-ndjson', ...headers } });
  return { status: res.statusCode, json: res.json() };
}

async function failed(id: string) {
  const res = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/?outcome=failed`, headers: { authorization: `Token ${tenant.token}` } });
  return res.body.split('\n').filter(Boolean).map((l) => JSON.parse(l)).map((r) => ({ line: r.line, step: r.step, errors: r.errors }));
}

async function countsOf(id: string) {
  return (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.counts as { total: number; pending: number; failed: number };
}

const LIMITS = { maxLineBytes: 1024, maxTotalBytes: 1024 * 1024, maxBlankLines: 10 };
const goodLine = () => JSON.stringify({ account: accountPayload(tenant.supplier) });
const goodLines = (n: number) => Array.from({ length: n }, goodLine);

const postJson = async (url: string, payload: string | Buffer, headers: Record<string, string> = {}) => {
  const res = await t.app.inject({ method: 'POST', url, payload, headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json', ...headers } });
  return { status: res.statusCode, json: res.json() };
};

describe('record lines that cannot be stored', () => {
  test('a lone surrogate, a NUL, or nesting 10,000 deep is that line\'s failed parse record; the 600 lines around them are kept', async () => {
    const id = await newJob();
    const surrogate = JSON.stringify({ account: accountPayload(tenant.supplier) }).replace('"Alice"', '"Al\\ud800ice"');
    const inKey = JSON.stringify({ account: accountPayload(tenant.supplier, { metadata: [{ key: 'k', value: { 'x\\udc00': 1 } }] }) }).replace('x\\\\udc00', 'x\\udc00');
    const nul = JSON.stringify({ account: accountPayload(tenant.supplier) }).replace('"Bob"', '"B\\u0000b"');
    const deep = `{"account": {"external_account_number": "DEEP-1", "metadata": [{"key": "k", "value": ${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}]}}`;
    const lines = [...goodLines(250), surrogate, ...goodLines(100), inKey, nul, ...goodLines(150), deep, ...goodLines(100)];
    assert.deepEqual(await upload(id, lines.join('\n')), { status: 200, json: { received: 604, total_records: 604 } });
    assert.deepEqual(await failed(id), [
      { line: 251, step: 'parse', errors: [{ code: 'invalid', attr: 'account.customers.0.given_name', detail: UNSTORABLE }] },
      { line: 352, step: 'parse', errors: [{ code: 'invalid', attr: 'account.metadata.0.value.x?', detail: 'Field names must not contain NUL characters or unpaired surrogates.' }] },
      { line: 353, step: 'parse', errors: [{ code: 'invalid', attr: 'account.customers.1.given_name', detail: UNSTORABLE }] },
      { line: 504, step: 'parse', errors: [{ code: 'parse_error', attr: 'non_field_errors', detail: 'The line is nested more than 64 levels deep.' }] },
    ]);
    assert.deepEqual(await countsOf(id), { ...(await countsOf(id)), total: 604, pending: 600, failed: 4 });
  });

  test('a "__proto__" key, or "constructor" with "prototype", anywhere in a line fails it at parse as its endpoint refuses the body', async () => {
    const id = await newJob();
    const withValue = (value: string) => JSON.stringify({ account: accountPayload(tenant.supplier, { metadata: [{ key: 'k', value: { v: 1 } }] }) }).replace('{"v":1}', value);
    const lines = [
      withValue('{"__proto__": {"x": 1}}'),
      withValue('{"constructor": {"prototype": {"x": 1}}}'),
      withValue('{"__\\u0070roto__": 1}'),
      JSON.stringify({ account: accountPayload(tenant.supplier) }).replace('{', '{"__proto__": {}, '),
      // Neither name as the parser reads it: kept.
      withValue('{"constructor": {"name": "x"}, "proto": 1, "prototype": 2}'),
      goodLine(),
    ];
    assert.deepEqual(await upload(id, lines.join('\n')), { status: 200, json: { received: 6, total_records: 6 } });
    const refused = { code: 'parse_error', attr: 'non_field_errors', detail: 'The line holds a key named "__proto__", or a "constructor" object with a "prototype" key; no field of the service has either name, and they are refused before validation.' };
    assert.deepEqual(await failed(id), [1, 2, 3, 4].map((line) => ({ line, step: 'parse', errors: [refused] })));
    // The endpoint refuses the same account, in the body's words.
    const account = JSON.parse(lines[4]!).account as object;
    const body = JSON.stringify(account).replace('"constructor":{"name":"x"}', '"constructor":{"prototype":{}}');
    const res = await postJson(VALIDATE_URL, body);
    assert.deepEqual(res, { status: 400, json: { code: 'parse_error', detail: refused.detail.replace('The line', 'The body') } });
  });

  test('an external account number far over its 100 characters does not fail the lines around it', async () => {
    const id = await newJob();
    const long = accountPayload(tenant.supplier, { external_account_number: randomBytes(6000).toString('base64') });
    assert.deepEqual(await upload(id, [goodLine(), JSON.stringify({ account: long }), goodLine()].join('\n')), { status: 200, json: { received: 3, total_records: 3 } });
    const res = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: { authorization: `Token ${tenant.token}` } });
    const lines = res.body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    // Not named as the record's number (nor checked for duplicates): its account step refuses it.
    assert.deepEqual(lines.map((r) => [r.line, r.outcome, r.external_account_number === null]), [[1, 'pending', false], [2, 'pending', true], [3, 'pending', false]]);
  });

  test('the same inputs on validate-account and staging are a 400, never a 500', async () => {
    for (const url of [VALIDATE_URL, STAGE_URL]) {
      const surrogate = await postJson(url, JSON.stringify(accountPayload(tenant.supplier)).replace('"Alice"', '"Al\\ud800ice"'));
      assert.deepEqual(surrogate, { status: 400, json: { detail: 'The account data failed validation.', code: 'account_failed_validation',
        errors: [{ code: 'invalid', attr: 'customers.0.given_name', detail: UNSTORABLE }] } });
      const deep = JSON.stringify(accountPayload(tenant.supplier)).replace('"Alice"', `${'['.repeat(10_000)}${']'.repeat(10_000)}`);
      const res = await postJson(url, deep);
      assert.equal(res.status, 400, JSON.stringify(res.json));
      assert.equal(res.json.code, 'account_failed_validation');
    }
  });

  test('an escaped backslash before u0000 is text, not NUL: kept in a record as on the JSON endpoints', async () => {
    const account = accountPayload(tenant.supplier);
    account.billing_address.street_address = 'C:\\u0000dir';
    const id = await newJob();
    assert.deepEqual(await upload(id, JSON.stringify({ account })), { status: 200, json: { received: 1, total_records: 1 } });
    assert.deepEqual(await failed(id), []);
    const [row] = await t.store.db.selectFrom('migration_job_records').select('record').where('job_id', '=', id).execute();
    assert.equal((row!.record as { account: typeof account }).account.billing_address.street_address, 'C:\\u0000dir');
    assert.equal((await postJson(VALIDATE_URL, JSON.stringify(account))).status, 200);
  });
});

describe('bytes that are not UTF-8', () => {
  const withBadBytes = (text: string) => {
    const [before, after] = text.split('Alice');
    return Buffer.concat([Buffer.from(`${before}Al`), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from(`ice${after}`)]);
  };

  test('a JSON body is 400 parse_error, plain or gzipped; nothing is read as U+FFFD', async () => {
    const body = withBadBytes(JSON.stringify(accountPayload(tenant.supplier)));
    for (const url of [VALIDATE_URL, STAGE_URL]) {
      assert.deepEqual(await postJson(url, body), { status: 400, json: { detail: NOT_UTF8, code: 'parse_error' } });
      assert.deepEqual(await postJson(url, gzipSync(body), { 'content-encoding': 'gzip' }), { status: 400, json: { detail: NOT_UTF8, code: 'parse_error' } });
    }
    const fine = accountPayload(tenant.supplier);
    fine.customers[0]!.given_name = 'Zoë 😀 Łucja';
    assert.equal((await postJson(VALIDATE_URL, Buffer.from(JSON.stringify(fine)))).status, 200);
  });

  test('a record line is its own failed parse record; the lines around it are kept, non-ASCII ones intact', async () => {
    const id = await newJob();
    const fine = accountPayload(tenant.supplier);
    fine.customers[0]!.given_name = 'Zoë 😀 Łucja';
    const body = Buffer.concat([Buffer.from(`${goodLine()}\n`), withBadBytes(goodLine()), Buffer.from(`\n${JSON.stringify({ account: fine })}\n`)]);
    assert.deepEqual(await upload(id, body), { status: 200, json: { received: 3, total_records: 3 } });
    assert.deepEqual(await failed(id), [{ line: 2, step: 'parse', errors: [{ code: 'parse_error', attr: 'non_field_errors', detail: 'The line is not valid UTF-8.' }] }]);
    const [row] = await t.store.db.selectFrom('migration_job_records').select('record').where('job_id', '=', id).where('line', '=', 3).execute();
    assert.equal((row!.record as { account: typeof fine }).account.customers[0]!.given_name, 'Zoë 😀 Łucja');
  });
});

describe('gzip that is not gzip', () => {
  const NOT_GZIP = (received: number, total: number) => ({
    detail: `The body is not valid gzip (not gzip, or cut short): the ${received} records read before the fault are kept; the job holds ${total}.`,
    code: 'parse_error', received, total_records: total,
  });

  test('a records upload labelled gzip that is not gzip is 400 parse_error, nothing kept', async () => {
    const id = await newJob();
    assert.deepEqual(await upload(id, goodLines(3).join('\n'), { 'content-encoding': 'gzip' }), { status: 400, json: NOT_GZIP(0, 0) });
    assert.equal((await countsOf(id)).total, 0);
  });

  test('a gzip stream cut in half is 400 parse_error saying how many complete lines were kept', async () => {
    const id = await newJob();
    const text = `${goodLines(1000).join('\n')}\n`;
    const gzipped = gzipSync(text);
    const cut = gzipped.subarray(0, Math.floor(gzipped.length / 2));
    // The complete lines in what the first half inflates to (10 bytes of gzip header first).
    const prefix = inflateRawSync(cut.subarray(10), { finishFlush: constants.Z_SYNC_FLUSH }).toString('utf8');
    const complete = prefix.split('\n').length - 1;
    assert.ok(complete > 0 && complete < 1000, String(complete));
    assert.deepEqual(await upload(id, cut, { 'content-encoding': 'gzip' }), { status: 400, json: NOT_GZIP(complete, complete) });
    assert.equal((await countsOf(id)).total, complete);
  });

  test('a gzipped upload that waits on back-pressure many times keeps every line and leaves no listener behind', async () => {
    // Stored, not compressed, and sent in 40 pieces each larger than gunzip takes at once (16 KiB):
    // every piece makes the upload wait for gunzip. A wait that left a listener on it piles up 40,
    // and Node warns past 10.
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const id = await newJob();
      const gzipped = gzipSync(`${goodLines(300).join('\n')}\n`, { level: 0 });
      const piece = Math.ceil(gzipped.length / 40);
      assert.ok(piece > 16 * 1024, String(piece));
      const pieces = Array.from({ length: 40 }, (_, i) => gzipped.subarray(i * piece, (i + 1) * piece));
      const res = await t.app.inject({ method: 'POST', url: `${BASE}${id}/records/`, payload: Readable.from(pieces),
        headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' } });
      assert.deepEqual({ status: res.statusCode, json: res.json() }, { status: 200, json: { received: 300, total_records: 300 } });
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message), []);
    } finally {
      process.off('warning', onWarning);
    }
  });

  test('the JSON endpoints answer 400 parse_error for bytes that are not gzip, or a gzip cut short', async () => {
    const text = JSON.stringify(accountPayload(tenant.supplier));
    const notGzip = { status: 400, json: { detail: 'The body is not valid gzip.', code: 'parse_error' } };
    assert.deepEqual(await postJson(VALIDATE_URL, text, { 'content-encoding': 'gzip' }), notGzip);
    const gzipped = gzipSync(text);
    assert.deepEqual(await postJson(VALIDATE_URL, gzipped.subarray(0, gzipped.length >> 1), { 'content-encoding': 'gzip' }), notGzip);
  });
});

describe('a byte order mark', () => {
  const BOM = '\uFEFF';

  test('at the start of an upload it is dropped: the first line is a record, and the file hash is of the lines without it', async () => {
    const id = await newJob();
    const [a, b, c] = goodLines(3);
    assert.deepEqual(await upload(id, `${BOM}${a}\n${b}\n`), { status: 200, json: { received: 2, total_records: 2 } });
    // Each upload's own start, gzipped too.
    assert.deepEqual(await upload(id, gzipSync(`${BOM}${c}\n`), { 'content-encoding': 'gzip' }), { status: 200, json: { received: 1, total_records: 3 } });
    assert.deepEqual(await failed(id), []);
    const report = await call(t.app, 'GET', `${BASE}${id}/reconciliation/`, { token: tenant.token });
    assert.equal(report.json.file.sha256, createHash('sha256').update(`${a}\n${b}\n${c}\n`).digest('hex'));
  });

  test('anywhere else it is the line\'s own bytes: that line fails at parse', async () => {
    const id = await newJob();
    const [a, b] = goodLines(2);
    assert.deepEqual(await upload(id, `${a}\n${BOM}${b}\n`), { status: 200, json: { received: 2, total_records: 2 } });
    assert.deepEqual((await failed(id)).map((r) => [r.line, r.step, r.errors[0].code]), [[2, 'parse', 'parse_error']]);
  });

  test('a mark split over the first chunks is dropped; a stream that is only the start of one is left as it is', async () => {
    const lines = async (chunks: number[][]) => {
      const out: Line[] = [];
      for await (const line of ndjsonLines((async function* () { for (const c of chunks) yield Buffer.from(c); })(), LIMITS)) out.push(line);
      return out;
    };
    const text = [...Buffer.from('{"a":1}\n')];
    assert.deepEqual(await lines([[0xef], [0xbb], [0xbf, ...text]]), [{ kind: 'text', text: '{"a":1}' }]);
    assert.deepEqual(await lines([[0xef, 0xbb]]), [{ kind: 'not_utf8' }]);
  });
});

describe('blank lines', () => {
  test('50 MB of newlines (a 50 KB gzip) over the upload limit is 413 at once', async () => {
    const small = await buildTestApp({ JOB_UPLOAD_LIMIT_BYTES: String(512 * 1024) });
    const who = await createTenant(small);
    const id = await newJob(small, who);
    const bomb = gzipSync(Buffer.concat([Buffer.from(`${JSON.stringify({ account: accountPayload(who.supplier) })}\n`), Buffer.alloc(50 * 1024 * 1024, 0x0a)]));
    assert.ok(bomb.length < 100 * 1024, String(bomb.length));
    const started = performance.now();
    assert.deepEqual(await upload(id, bomb, { 'content-encoding': 'gzip' }, small, who), { status: 413, json: {
      detail: 'An upload is at most 524288 bytes; the records before the limit are kept.', code: 'payload_too_large', received: 1, total_records: 1 } });
    assert.ok(performance.now() - started < 5000, `${performance.now() - started} ms`);
  });

  test('more blank lines than a job may hold records is 413, within the byte limit; the records before are kept', async () => {
    const few = await buildTestApp({ JOB_MAX_RECORDS: '1000' });
    const who = await createTenant(few);
    const id = await newJob(few, who);
    const record = () => JSON.stringify({ account: accountPayload(who.supplier) });
    const body = `${record()}\n${record()}\n${'\n'.repeat(600)}${' \r\n'.repeat(401)}${record()}\n`;
    assert.deepEqual(await upload(id, body, {}, few, who), { status: 413, json: {
      detail: 'An upload holds at most 1000 blank lines (JOB_MAX_RECORDS); the records before them are kept.', code: 'payload_too_large', received: 2, total_records: 2 } });
    // As many blank lines as records a job may hold are skipped.
    const fine = await newJob(few, who);
    assert.deepEqual(await upload(fine, `${record()}\n${'\n'.repeat(999)}${record()}`, {}, few, who), { status: 200, json: { received: 2, total_records: 2 } });
  });

  test('50 MB of newlines (a 50 KB gzip) under the byte limit is 413 in seconds, once past JOB_MAX_RECORDS blank lines', async () => {
    const id = await newJob();
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x0a));
    const started = performance.now();
    assert.deepEqual(await upload(id, bomb, { 'content-encoding': 'gzip' }), { status: 413, json: {
      detail: 'An upload holds at most 1000000 blank lines (JOB_MAX_RECORDS); the records before them are kept.', code: 'payload_too_large', received: 0, total_records: 0 } });
    assert.ok(performance.now() - started < 5000, `${performance.now() - started} ms`);
  });
});

describe('a connection closed in the middle of an upload', () => {
  /** Sends `body` as an upload announced longer than it is, then closes, while the store is kept busy; answers the job. */
  async function cutUpload(body: Buffer, headers: string): Promise<string> {
    if (!t.app.server.listening) await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as { port: number };
    const id = await newJob();
    // The store is kept busy while the request arrives and its client goes: the upload's first
    // look at its job waits until after the close.
    const busy = holdStore(600);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(Buffer.concat([Buffer.from(`POST ${BASE}${id}/records/ HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${tenant.token}\r\n`
      + `Content-Type: application/x-ndjson\r\n${headers}Content-Length: ${body.length + 500}\r\n\r\n`), body]), () => socket.destroy());
    await once(socket, 'close');
    await busy;
    return id;
  }
  const partial = '{"account": {"external_account_n';

  test('the complete lines sent before the close are kept, though the job was still being looked up when it closed', async () => {
    for (let round = 0; round < 3; round++) {
      const id = await cutUpload(Buffer.from(`${goodLines(2).join('\n')}\n${partial}`), '');
      await waitUntil(async () => (await countsOf(id)).total === 2, `round ${round}: the two complete lines are kept`, 10_000);
    }
  });

  test('gzipped: the complete lines the bytes sent before the close inflate to are kept', async () => {
    for (let round = 0; round < 3; round++) {
      // A gzip stream flushed after two whole lines and half a third, never finished.
      const gzip = createGzip();
      const flushed: Buffer[] = [];
      gzip.on('data', (chunk: Buffer) => flushed.push(chunk));
      gzip.write(`${goodLines(2).join('\n')}\n${partial}`);
      await new Promise<void>((resolve) => gzip.flush(constants.Z_SYNC_FLUSH, () => resolve()));
      const id = await cutUpload(Buffer.concat(flushed), 'Content-Encoding: gzip\r\n');
      await waitUntil(async () => (await countsOf(id)).total === 2, `round ${round}: the two complete lines are kept`, 10_000);
    }
  });
});

/** Keeps the store busy for `ms`: PGlite runs one statement at a time; on PostgreSQL a session of its own locks the jobs table. */
async function holdStore(ms: number): Promise<void> {
  if (!onPostgres) {
    await sql`SELECT pg_sleep(${ms / 1000})`.execute(t.store.db);
    return;
  }
  const session = await pgSession(t.config.databaseUrl);
  try {
    await session.query('BEGIN');
    await session.query('LOCK TABLE migration_jobs IN ACCESS EXCLUSIVE MODE');
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    await session.query('ROLLBACK').catch(() => {});
    await session.end();
  }
}
