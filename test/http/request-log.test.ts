import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { pino } from 'pino';
import { buildApp } from '../../src/app.ts';
import { AppError } from '../../src/core/errors.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { closedPortUrl } from '../support/fake-vendor.ts';
import { STAGE_URL } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, createTenant, unique } from '../support/test-app.ts';

// What an operator reads: one line per request with its route, status, error code and subject;
// expected upstream failures as warnings without a stack. And the errors Fastify raises while
// routing (before any hook: no token needed to meet them) in the one error body.
const t = await buildTestApp();

const lines: Array<Record<string, any>> = [];
const stream = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
const app = await buildApp({ modules: t.modules, logger: pino({ level: 'info' }, stream) });
// A test-only route for the create limit's 429 (on PGlite creates never overlap, so the limit cannot be met).
app.get('/v1/data-import/__limit/', { schema: { hide: true } }, async () => {
  throw new AppError('concurrency_limit_exceeded', 'More than 2 accounts are being created at once; retry shortly.', { headers: { 'Retry-After': '2' } });
});
after(() => app.close());
const tenant = await createTenant(t);

async function send(method: 'GET' | 'POST', url: string, body?: unknown, token: string | null = tenant.token) {
  const id = unique('req');
  const res = await app.inject({
    method, url, headers: { 'x-request-id': id, ...(token ? { authorization: `Token ${token}` } : {}) },
    ...(body !== undefined ? { payload: body as object } : {}),
  });
  const mine = lines.filter((line) => line.reqId === id);
  // Everything but the time fields, which change from run to run.
  const strip = ({ time, pid, hostname, ms, ...rest }: Record<string, any>) => {
    assert.equal(typeof time, 'number');
    if (rest.msg === 'request completed') assert.equal(typeof ms, 'number');
    return rest;
  };
  return { res, json: res.json(), lines: mine.map(strip), id };
}

describe('the request line', () => {
  test('a refused stage: route pattern, status, error code, supplier and account; none of the payload', async () => {
    const payload: any = accountPayload(tenant.supplier);
    payload.customers[0].mobile = '+44 12';
    const { res, lines: logged, id } = await send('POST', STAGE_URL, payload);
    assert.equal(res.statusCode, 400);
    assert.deepEqual(logged, [{
      level: 30, reqId: id, msg: 'request completed', method: 'POST', url: STAGE_URL, route: STAGE_URL, status: 400,
      code: 'account_failed_validation', import_supplier: tenant.supplier, external_account_number: payload.external_account_number,
    }]);
    assert.doesNotMatch(JSON.stringify(logged), /\+44 12|family_name|billing_address/);
  });

  test('path parameters name the subject; the route is the pattern, not the path', async () => {
    const ext = unique('EXT');
    const url = `/v1/data-import/account-transfer-status/${tenant.supplier}/${ext}/`;
    const { res, lines: logged, id } = await send('GET', url);
    assert.equal(res.statusCode, 404);
    assert.deepEqual(logged, [{
      level: 30, reqId: id, msg: 'request completed', method: 'GET', url,
      route: '/v1/data-import/account-transfer-status/:import_supplier_code/:external_account_number/', status: 404,
      code: 'account_not_found', import_supplier: tenant.supplier, external_account_number: ext,
    }]);
  });

  test('a success has no code; a request without a token is logged with not_authenticated', async () => {
    const ok = await send('GET', '/healthz');
    assert.deepEqual(ok.lines, [{ level: 30, reqId: ok.id, msg: 'request completed', method: 'GET', url: '/healthz', route: '/healthz', status: 200 }]);
    const url = `/v1/data-import/stats/${tenant.supplier}/`;
    const anonymous = await send('GET', url, undefined, null);
    assert.deepEqual(anonymous.lines, [{
      level: 30, reqId: anonymous.id, msg: 'request completed', method: 'GET', url, route: '/v1/data-import/stats/:import_supplier_code/',
      status: 401, code: 'not_authenticated', import_supplier: tenant.supplier,
    }]);
  });

  test('a refused API key at POST /graphql answers 200, and its line carries authentication_failed', async () => {
    const { res, lines: logged, id } = await send('POST', '/graphql', {
      query: 'mutation { obtainToken(input: {APIKey: "ak_000000000000.wrong"}) { token } }',
    }, null);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(logged, [{ level: 30, reqId: id, msg: 'request completed', method: 'POST', url: '/graphql', route: '/graphql', status: 200, code: 'authentication_failed' }]);
  });
});

describe('expected upstream failures are warnings without a stack', () => {
  test('a payment vendor that cannot be reached: warn with code and detail, then the request line', async () => {
    const vendor = unique('VEND');
    await admin.createVendor(t.store.db, vendor, { kind: 'http', url: await closedPortUrl(), timeoutMs: 200 });
    const account = await insertImportedAccount(t, tenant);
    const { res, json, lines: logged, id } = await send('POST', '/v1/data-import/payment-instruction/create/', {
      import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, vendor, reference: unique('ref'), type: 'CARD',
    });
    assert.equal(res.statusCode, 500);
    assert.equal(json.code, 'payment_vendor_unavailable');
    assert.deepEqual(logged, [
      { level: 40, reqId: id, msg: 'request refused: an upstream service or limit', code: 'payment_vendor_unavailable', detail: json.detail },
      {
        level: 30, reqId: id, msg: 'request completed', method: 'POST', url: '/v1/data-import/payment-instruction/create/',
        route: '/v1/data-import/payment-instruction/create/', status: 500, code: 'payment_vendor_unavailable',
        import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber,
      },
    ]);
  });

  test('the create limit (429): a warning, no stack', async () => {
    const { res, lines: logged, id } = await send('GET', '/v1/data-import/__limit/');
    assert.equal(res.statusCode, 429);
    assert.deepEqual(logged, [
      { level: 40, reqId: id, msg: 'request refused: an upstream service or limit', code: 'concurrency_limit_exceeded', detail: 'More than 2 accounts are being created at once; retry shortly.' },
      { level: 30, reqId: id, msg: 'request completed', method: 'GET', url: '/v1/data-import/__limit/', route: '/v1/data-import/__limit/', status: 429, code: 'concurrency_limit_exceeded' },
    ]);
  });
});

describe('errors raised by the router, in the error body', () => {
  const LONG = 'a'.repeat(3000);
  const cases: Array<[string, string, number, Record<string, string>]> = [
    ['a malformed percent-escape under /v1', '/v1/data-import/accounts/SUP/%E0%A4%A/', 400,
      { detail: 'The path holds a malformed percent-escape (a "%" not followed by a valid UTF-8 sequence).', code: 'bad_url' }],
    ['a malformed percent-escape outside /v1', '/readyz%zz', 400,
      { detail: 'The path holds a malformed percent-escape (a "%" not followed by a valid UTF-8 sequence).', code: 'bad_url' }],
    ['a malformed percent-escape in a wildcard route outside /v1', '/dashboard/%E0%A4%A', 400,
      { detail: 'The path holds a malformed percent-escape (a "%" not followed by a valid UTF-8 sequence).', code: 'bad_url' }],
  ];
  for (const [name, url, status, body] of cases) {
    test(`${name}: ${status} ${body.code}, with or without a token, logged with its code`, async () => {
      for (const token of [null, tenant.token]) {
        const { res, json, lines: logged, id } = await send('GET', url, undefined, token);
        assert.equal(res.statusCode, status);
        assert.deepEqual(json, body);
        assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
        assert.equal(logged.length, 1);
        assert.deepEqual({ ...logged[0], url: undefined }, { level: 30, reqId: id, msg: 'request completed', method: 'GET', url: undefined, route: null, status, code: body.code });
        assert.ok(logged[0]!.url.length <= 501, 'the logged url is cut short');
      }
    });
  }

  test('outside /v1 no route takes a path parameter: a 3,000-character path is an ordinary 404', async () => {
    const url = `/docs/static/${LONG}`;
    const { res, json } = await send('GET', url, undefined, null);
    assert.equal(res.statusCode, 404);
    assert.deepEqual(json, { detail: `No route for GET ${url}.`, code: 'not_found' });
  });
});
