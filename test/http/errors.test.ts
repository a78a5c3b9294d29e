import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { pino } from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/schema.ts';
import { addProbeRoutes, PROBE } from '../support/probe-routes.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// The error model of D4, wired once for the whole app: every failure is a JSON body with detail and
// code, whatever the input. Exercised through test-only routes behind the real guard and validator.
const t = await buildTestApp();
addProbeRoutes(t.app, t.store.db, t.tokens);

// A second app over the same store with a small body limit and a captured JSON log.
const logLines: Array<Record<string, unknown>> = [];
const logStream = new Writable({ write(chunk, _enc, done) { logLines.push(JSON.parse(String(chunk))); done(); } });
const small = await buildApp({
  modules: t.modules, config: loadConfig({ DATABASE_URL: t.config.databaseUrl ?? '', BODY_LIMIT_BYTES: '2048' }),
  logger: pino({ level: 'error' }, logStream),
});
addProbeRoutes(small, t.store.db, t.tokens);
after(() => small.close());

const tenant = await createTenant(t);
const post = (payload: string, headers: Record<string, string> = {}, app = t.app) => app.inject({
  method: 'POST', url: `${PROBE}/suppliers/`, payload,
  headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json', ...headers },
});

// Every app is built before the first describe: a top-level await between describes lets the file's
// root test end (and its after hooks close the apps) before the describes after it are registered.
// A third app whose store refuses every connection, and whose /graphql meets a lost store before its handler.
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const unreachableDb = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => ({
      init: async () => {},
      acquireConnection: async () => { throw refused(); },
      beginTransaction: async () => {},
      commitTransaction: async () => {},
      rollbackTransaction: async () => {},
      releaseConnection: async () => {},
      destroy: async () => {},
    }),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
const lost = await buildApp({
  modules: { ...t.modules, store: { ...t.store, db: unreachableDb }, db: unreachableDb },
});
lost.addHook('onRequest', async (request) => {
  if (request.url === '/graphql') throw refused();
});
after(() => lost.close());

describe('routing errors', () => {
  test('an unknown path is 404 not_found; under /v1 only with a token (401 without)', async () => {
    const outside = await call(t.app, 'GET', '/no-such-thing/');
    assert.deepEqual([outside.status, outside.json], [404, { detail: 'No route for GET /no-such-thing/.', code: 'not_found' }]);
    const res = await call(t.app, 'GET', '/v1/data-import/no-such-thing/', { token: tenant.token });
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { detail: 'No route for GET /v1/data-import/no-such-thing/.', code: 'not_found' });
    const without = await call(t.app, 'GET', '/v1/data-import/no-such-thing/');
    assert.deepEqual([without.status, without.json], [401, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' }]);
  });

  test('a wrong method is 405 method_not_allowed with an Allow header', async () => {
    const res = await call(t.app, 'DELETE', `${PROBE}/suppliers/`, { token: tenant.token });
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'POST');
    assert.deepEqual(res.json, { detail: 'Method "DELETE" not allowed.', code: 'method_not_allowed' });
    const get = await call(t.app, 'PUT', '/healthz');
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'GET, HEAD', 'a GET route answers HEAD too');
    // Answered before any body is read: a malformed, empty or oversized body does not turn it into a body error.
    for (const payload of ['{', '', 'x'.repeat(2 * 1024 * 1024)]) {
      const res = await t.app.inject({ method: 'PUT', url: `${PROBE}/suppliers/`, payload, headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json' } });
      assert.deepEqual([res.statusCode, res.json().code, res.headers.allow], [405, 'method_not_allowed', 'POST'], `a body of ${payload.length} bytes`);
    }
    assert.equal((await call(t.app, 'HEAD', '/healthz')).status, 200);
  });
});

describe('body errors', () => {
  test('a body over the limit is 413 payload_too_large', async () => {
    const res = await post(JSON.stringify({ import_supplier: tenant.supplier, pad: 'x'.repeat(3000) }), {}, small);
    assert.equal(res.statusCode, 413);
    assert.deepEqual(res.json(), { detail: 'The request body is larger than the limit.', code: 'payload_too_large' });
    assert.equal((await post(JSON.stringify({ import_supplier: tenant.supplier }), {}, small)).statusCode, 200, 'under the limit it passes');
  });

  test('a non-JSON content type is 415 unsupported_media_type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await post('import_supplier=x', { 'content-type': type });
      assert.equal(res.statusCode, 415, type);
      assert.deepEqual(res.json(), { detail: 'Send the body as application/json.', code: 'unsupported_media_type' });
    }
  });

  test('malformed JSON is 400 parse_error', async () => {
    for (const payload of ['{"import_supplier": ', '{import_supplier: 1}', '{"a": 1}}', '\u0000']) {
      const res = await post(payload);
      assert.equal(res.statusCode, 400, payload);
      assert.deepEqual(res.json(), { detail: 'The body is not valid JSON.', code: 'parse_error' }, payload);
    }
  });

  test('a "__proto__" key, or "constructor" with "prototype", is valid JSON refused by name, not called malformed', async () => {
    for (const payload of ['{"__proto__": {"x": 1}}', '\ufeff{"a": [{"__proto__": null}]}', '{"account": {"constructor": {"prototype": {"x": 1}}}}']) {
      const res = await post(payload);
      assert.equal(res.statusCode, 400, payload);
      assert.equal(res.json().code, 'parse_error', payload);
      assert.match(res.json().detail, /key named "__proto__", or a "constructor" object with a "prototype" key/, payload);
    }
  });

  test('an empty JSON body is 400 parse_error; no body at all is a validation error', async () => {
    const res = await post('');
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), { detail: 'The body is empty; send a JSON document.', code: 'parse_error' });
    const none = await call(t.app, 'POST', `${PROBE}/suppliers/`, { token: tenant.token });
    assert.equal(none.status, 400);
    assert.equal(none.json.code, 'invalid');
    assert.equal(none.json.errors[0].attr, 'non_field_errors');
  });

  test('authentication is checked before the body: no token and a bad body is 401', async () => {
    const res = await t.app.inject({ method: 'POST', url: `${PROBE}/suppliers/`, payload: '{bad', headers: { 'content-type': 'application/json' } });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, 'not_authenticated');
  });
});

describe('validation (strict schema)', () => {
  test('no coercion, no removal: every error at once, in document order', async () => {
    const res = await post(JSON.stringify({ extra: 1, import_supplier: 123, count: '5', flag: 'true', nested: { a: 1 } }));
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), {
      detail: 'The request failed validation.',
      code: 'invalid',
      errors: [
        { detail: 'This field is not part of the documented payload and must not be sent.', code: 'unknown_field', attr: 'extra' },
        { detail: 'Expected a string.', code: 'invalid', attr: 'import_supplier' },
        { detail: 'Expected an integer.', code: 'invalid', attr: 'count' },
        { detail: 'Expected a boolean.', code: 'invalid', attr: 'flag' },
        { detail: 'This field is not part of the documented payload and must not be sent.', code: 'unknown_field', attr: 'nested' },
      ],
    });
  });

  test('required, null, bounds', async () => {
    const missing = await post(JSON.stringify({ count: 11 }));
    assert.deepEqual(missing.json().errors, [
      { detail: 'Ensure this value is less than or equal to 10.', code: 'max_value', attr: 'count' },
      { detail: 'This field is required.', code: 'required', attr: 'import_supplier' },
    ]);
    const nulls = await post(JSON.stringify({ import_supplier: null, count: -1 }));
    assert.deepEqual(nulls.json().errors.map((e: { code: string; attr: string }) => [e.attr, e.code]), [['import_supplier', 'null'], ['count', 'min_value']]);
    const long = await post(JSON.stringify({ import_supplier: 'x'.repeat(65) }));
    assert.deepEqual(long.json().errors, [{ detail: 'Ensure this field has no more than 64 characters.', code: 'max_length', attr: 'import_supplier' }]);
  });
});

describe('one error mapper for every answer', () => {
  test('/readyz with the store unreachable: 503 service_unavailable in the D4 shape', async () => {
    const res = await call(lost, 'GET', '/readyz');
    assert.deepEqual([res.status, res.json], [503, { detail: 'The store is not reachable.', code: 'service_unavailable' }]);
  });

  test('POST /graphql meeting a lost store before its handler: 503 service_unavailable with Retry-After, in the GraphQL shape', async () => {
    const res = await lost.inject({ method: 'POST', url: '/graphql', payload: { query: '{ apiVersion }' } });
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['retry-after'], '1');
    assert.deepEqual(res.json(), {
      errors: [{ message: 'The database is unavailable; retry shortly.', extensions: { code: 'service_unavailable' } }],
    });
  });
});

describe('unexpected errors', () => {
  test('a thrown error is 500 internal_error JSON with no stack or message, logged with the request id', async () => {
    const res = await small.inject({
      method: 'POST', url: `${PROBE}/boom/`, payload: '{}',
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json', 'x-request-id': 'req-boom-1' },
    });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { detail: 'An unexpected error occurred. It has been logged with this request id.', code: 'internal_error' });
    assert.doesNotMatch(res.body, /boom|secret|\.ts|at /);
    assert.equal(res.headers['x-request-id'], 'req-boom-1');
    const logged = logLines.find((line) => line.reqId === 'req-boom-1');
    assert.ok(logged, 'the failure is logged with the request id');
    assert.match(JSON.stringify(logged.err), /boom/);
  });

  test('a request id is echoed, or made when absent or unusable', async () => {
    const given = await call(t.app, 'GET', '/healthz', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(given.headers['x-request-id'], 'abc-123');
    const made = await call(t.app, 'GET', '/healthz', { headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(String(made.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });
});

// Last in the file: building the OpenAPI document rewrites shared schemas (@fastify/swagger's
// references), after which an app built later in this process fails to compile its serializers.
describe('over-long path parameters', () => {
  /** A valid value for each path parameter the document names. */
  const VALID: Record<string, string> = { import_supplier_code: tenant.supplier, external_account_number: 'EXT-1', job_id: randomUUID() };

  test('every operation with a path parameter answers an over-long value with a status its OpenAPI entry lists: 400 invalid at the parameter', async () => {
    const doc = (await call(t.app, 'GET', '/openapi.json')).json;
    let checked = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const params = (op.parameters ?? []).filter((p: any) => p.in === 'path');
        for (const param of params) {
          assert.equal(typeof param.schema.maxLength, 'number', `${method} ${path}: ${param.name} has a maximum length`);
          for (const length of [param.schema.maxLength + 1, 101, 3000]) {
            const url = path.replace(/\{(\w+)\}/g, (_, name: string) => (name === param.name ? 'a'.repeat(length) : encodeURIComponent(VALID[name]!)));
            // A JSON body is sent as an object (an empty one would be refused as unreadable before the path is judged).
            const type = op.requestBody ? Object.keys(op.requestBody.content)[0]! : undefined;
            const res = await t.app.inject({
              method: method.toUpperCase() as 'GET', url,
              headers: { authorization: `Token ${tenant.token}`, ...(type ? { 'content-type': type } : {}) },
              ...(type ? { payload: type === 'application/json' ? '{}' : '' } : {}),
            });
            const where = `${method.toUpperCase()} ${path} with ${param.name} of ${length} characters: ${res.statusCode} ${res.body}`;
            assert.ok(Object.keys(op.responses).includes(String(res.statusCode)), where);
            assert.deepEqual([res.statusCode, res.json()], [400, { detail: 'The request failed validation.', code: 'invalid', errors: [
              { detail: `Ensure this field has no more than ${param.schema.maxLength} characters.`, code: 'max_length', attr: param.name }] }], where);
            checked += 1;
          }
        }
      }
    }
    assert.ok(checked >= 13 * 3, `${checked} cases`);
  });

  test('authentication still comes first: without a token an over-long job id is 401', async () => {
    const res = await call(t.app, 'GET', `/v1/data-import/migration-jobs/${'a'.repeat(3000)}/`);
    assert.deepEqual([res.status, res.json], [401, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' }]);
  });
});
