import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { createTokenService } from '../../src/modules/auth/index.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { addProbeRoutes, PROBE } from '../support/probe-routes.ts';
import { buildTestApp, call, createTenant, unique } from '../support/test-app.ts';

// Authentication (D3): tokens from POST /graphql, the REST guard, revocation, expiry, restarts and
// tenancy (another organisation's supplier is indistinguishable from an unknown one).
const t = await buildTestApp();
addProbeRoutes(t.app, t.store.db, t.tokens);

const FIELDS = 'token expiresIn refreshToken refreshExpiresIn';
const obtain = (input: string) => call(t.app, 'POST', '/graphql', {
  body: { query: `mutation ObtainToken { obtainToken(input: ${input}) { ${FIELDS} } }` },
});
const withKey = (key: string) => obtain(`{APIKey: ${JSON.stringify(key)}}`);
const withRefresh = (token: string) => obtain(`{refreshToken: ${JSON.stringify(token)}}`);
const probe = (token: string | undefined, code: string) => call(t.app, 'GET', `${PROBE}/suppliers/${code}/`, token ? { token } : {});

function assertPair(pair: Record<string, unknown>) {
  assert.deepEqual(Object.keys(pair).sort(), ['expiresIn', 'refreshExpiresIn', 'refreshToken', 'token']);
  assert.match(String(pair.token), /^[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.match(String(pair.refreshToken), /^[\w-]+\.[\w-]+\.[\w-]+$/);
  assert.equal(pair.expiresIn, 3600);
  assert.equal(pair.refreshExpiresIn, 7 * 24 * 3600);
}

function assertAuthFailure(res: { status: number; json: any }, code = 'authentication_failed') {
  assert.equal(res.status, 200);
  assert.deepEqual(res.json.data, { obtainToken: null });
  assert.equal(res.json.errors.length, 1);
  assert.equal(res.json.errors[0].extensions.code, code);
  assert.deepEqual(res.json.errors[0].path, ['obtainToken']);
  assert.equal(typeof res.json.errors[0].message, 'string');
}

describe('obtainToken at POST /graphql', () => {
  test('an API key yields a token pair that the REST guard accepts', async () => {
    const tenant = await createTenant(t);
    const res = await withKey(tenant.apiKey);
    assert.equal(res.status, 200);
    assert.equal(res.json.errors, undefined);
    assertPair(res.json.data.obtainToken);
    const rest = await probe(res.json.data.obtainToken.token, tenant.supplier);
    assert.equal(rest.status, 200);
    assert.equal(rest.json.code, tenant.supplier);
  });

  test('variables and an operation name work as in any GraphQL client', async () => {
    const tenant = await createTenant(t);
    const res = await call(t.app, 'POST', '/graphql', {
      body: {
        query: `query V { apiVersion } mutation ObtainToken($key: String!) { obtainToken(input: {APIKey: $key}) { token } }`,
        operationName: 'ObtainToken',
        variables: { key: tenant.apiKey },
      },
    });
    assert.equal(res.status, 200);
    assert.equal((await probe(res.json.data.obtainToken.token, tenant.supplier)).status, 200);
  });

  test('a refresh token yields a new pair; the old access token is not a refresh token, nor the reverse', async () => {
    const tenant = await createTenant(t);
    const first = (await withKey(tenant.apiKey)).json.data.obtainToken;
    const res = await withRefresh(first.refreshToken);
    assert.equal(res.status, 200);
    assertPair(res.json.data.obtainToken);
    assert.notEqual(res.json.data.obtainToken.token, first.token);
    assert.equal((await probe(res.json.data.obtainToken.token, tenant.supplier)).status, 200);

    assertAuthFailure(await withRefresh(first.token));
    const rest = await probe(first.refreshToken, tenant.supplier);
    assert.equal(rest.status, 401);
    assert.equal(rest.json.code, 'authentication_failed');
  });

  test('a bad key gives an authentication_failed error and no token', async () => {
    const tenant = await createTenant(t);
    const [prefix] = tenant.apiKey.split('.');
    for (const key of ['nonsense', `${prefix}.${'x'.repeat(43)}`, `ak_000000000000.${'y'.repeat(43)}`, '', tenant.apiKey.slice(0, -1)]) {
      const res = await withKey(key);
      assertAuthFailure(res);
      assert.doesNotMatch(JSON.stringify(res.json), /eyJ/, 'no token in the answer');
    }
    assertAuthFailure(await withRefresh('not.a.jwt'));
  });

  test('input must hold exactly one of APIKey and refreshToken (@oneOf)', async () => {
    const tenant = await createTenant(t);
    for (const input of [`{}`, `{APIKey: ${JSON.stringify(tenant.apiKey)}, refreshToken: "x"}`, `{APIKey: null}`]) {
      const res = await obtain(input);
      assert.equal(res.status, 400, input);
      assert.equal(res.json.data, undefined);
      assert.equal(res.json.errors[0].extensions.code, 'invalid');
    }
  });
});

describe('malformed GraphQL requests answer GraphQL error JSON, never 5xx', () => {
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['syntax error', { payload: '{"query": "mutation { obtainToken(input: {APIKey: "}' }, 400, 'parse_error'],
    ['unknown field', { payload: { query: '{ nope }' } }, 400, 'invalid'],
    ['no query', { payload: { variables: {} } }, 400, 'required'],
    ['query not a string', { payload: { query: 42 } }, 400, 'invalid'],
    ['an undocumented envelope field', { payload: { query: '{ apiVersion }', extra: 1 } }, 400, 'unknown_field'],
    ['a JSON array', { payload: '[1]' }, 400, 'invalid'],
    ['unparsable JSON', { payload: '{"query": ' }, 400, 'parse_error'],
    ['empty JSON body', { payload: '' }, 400, 'parse_error'],
    ['a non-JSON content type', { payload: 'query { apiVersion }', headers: { 'content-type': 'application/graphql' } }, 415, 'unsupported_media_type'],
    ['an unknown operation name', { payload: { query: '{ apiVersion }', operationName: 'Nope' } }, 400, 'invalid'],
    ['a subscription (none is offered)', { payload: { query: 'subscription { apiVersion }' } }, 400, 'invalid'],
    ['a subscription chosen by name beside a query', { payload: { query: 'query Q { apiVersion } subscription S { apiVersion }', operationName: 'S' } }, 400, 'invalid'],
    ['variables that do not fit', { payload: { query: 'mutation M($k: String!) { obtainToken(input: {APIKey: $k}) { token } }', variables: { k: 5 } } }, 400, 'invalid'],
    // Both overflowed graphql-js's recursive parser (a 500) while well under its token cap.
    ['a list value nested 3,000 levels deep', { payload: { query: `query { __typename(x: ${'['.repeat(3000)}${']'.repeat(3000)}) }` } }, 400, 'parse_error'],
    ['a selection nested 4,000 levels deep, never closed', { payload: { query: '{a'.repeat(4000) } }, 400, 'parse_error'],
  ];
  for (const [name, { payload, headers }, status, code] of cases) {
    test(name, async () => {
      const res = await t.app.inject({
        method: 'POST', url: '/graphql', payload: payload as string,
        headers: { 'content-type': 'application/json', ...(headers as Record<string, string> | undefined) },
      });
      assert.equal(res.statusCode, status, res.body);
      const json = res.json();
      assert.ok(Array.isArray(json.errors) && json.errors.length > 0, res.body);
      assert.equal(json.errors[0].extensions.code, code, res.body);
      assert.equal(typeof json.errors[0].message, 'string');
      assert.equal(json.data, undefined);
    });
  }

  test('nesting: 64 levels are read as a query, 65 are refused before parsing with the position of the one too many', async () => {
    const nested = (levels: number) => `query { __typename(x: ${'['.repeat(levels - 2)}${']'.repeat(levels - 2)}) }`;
    const read = await call(t.app, 'POST', '/graphql', { body: { query: nested(64) } });
    assert.equal(read.status, 400);
    assert.equal(read.json.errors[0].extensions.code, 'invalid', 'parsed, then refused by validation (__typename takes no argument)');
    const refused = await call(t.app, 'POST', '/graphql', { body: { query: nested(65) } });
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.json.errors, [{ message: 'Syntax Error: the query nests more than 64 levels deep.',
      locations: [{ line: 1, column: 23 + 62 }], extensions: { code: 'parse_error' } }]); // the brace and the parenthesis, then the 63rd bracket
  });

  test('GET /graphql is 405 with Allow: POST', async () => {
    const res = await call(t.app, 'GET', '/graphql');
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'POST');
    assert.equal(res.json.code, 'method_not_allowed');
  });
});

describe('the REST guard', () => {
  test('no Authorization header: 401 not_authenticated', async () => {
    const tenant = await createTenant(t);
    const res = await probe(undefined, tenant.supplier);
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' });
  });

  test('a bad token or header form: 401 authentication_failed', async () => {
    const tenant = await createTenant(t);
    const [header, payload] = tenant.token.split('.');
    for (const authorization of ['Token nonsense', `Token ${header}.${payload}.AAAA`, `Bearer ${tenant.token}`, 'Token', `token${tenant.token}`]) {
      const res = await call(t.app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { headers: { authorization } });
      assert.equal(res.status, 401, authorization);
      assert.equal(res.json.code, 'authentication_failed');
      assert.equal(typeof res.json.detail, 'string');
      assert.deepEqual(Object.keys(res.json).sort(), ['code', 'detail']);
    }
  });

  test('the scheme name is case-insensitive (RFC 9110): token, TOKEN and Token all work', async () => {
    const tenant = await createTenant(t);
    for (const scheme of ['token', 'TOKEN', 'Token', 'tOkEn']) {
      const res = await call(t.app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { headers: { authorization: `${scheme} ${tenant.token}` } });
      assert.equal(res.status, 200, scheme);
    }
  });

  test('an expired token: 401 token_expired; an expired refresh token: token_expired from obtainToken', async () => {
    const tenant = await createTenant(t);
    const shortLived = await createTokenService({ db: t.store.db, directory: storeDirectory(t.store.db), clock: t.clock },
      { ...t.config, tokenTtlSeconds: 1, refreshTokenTtlSeconds: 1 });
    // The clock stands still from the token's issue: a second-long token issued late in a second
    // would otherwise expire before a slow machine's first probe reaches it.
    t.clock.set(new Date(Math.floor(Date.now() / 1000) * 1000));
    try {
      const pair = await shortLived.obtainWithApiKey(tenant.apiKey);
      assert.equal((await probe(pair.token, tenant.supplier)).status, 200, 'valid before it expires (and on another service over the store)');
      // The app's clock is moved to the token's last valid instant, then past it: nothing waits.
      const { exp } = JSON.parse(Buffer.from(pair.token.split('.')[1]!, 'base64url').toString()) as { exp: number };
      t.clock.set(new Date(exp * 1000));
      assert.equal((await probe(pair.token, tenant.supplier)).status, 200, 'valid up to its exp');
      t.clock.advance(1001);
      const res = await probe(pair.token, tenant.supplier);
      assert.equal(res.status, 401);
      assert.deepEqual(res.json, { detail: 'The token has expired; obtain a new one.', code: 'token_expired' });
      assertAuthFailure(await withRefresh(pair.refreshToken), 'token_expired');
    } finally {
      t.clock.reset();
    }
  });

  test('revoking a key cuts off its tokens and refresh tokens; other keys of the organisation go on', async () => {
    const tenant = await createTenant(t);
    const other = await admin.createApiKey(t.store.db, tenant.organisation);
    const otherToken = (await withKey(other.api_key)).json.data.obtainToken.token;
    const pair = (await withKey(tenant.apiKey)).json.data.obtainToken;
    assert.equal((await probe(pair.token, tenant.supplier)).status, 200);

    await admin.revokeApiKey(t.store.db, tenant.apiKey.split('.')[0]!);
    await t.directory.sync();
    const res = await probe(pair.token, tenant.supplier);
    assert.equal(res.status, 401);
    assert.equal(res.json.code, 'authentication_failed');
    assert.equal((await probe(tenant.token, tenant.supplier)).status, 401);
    assertAuthFailure(await withRefresh(pair.refreshToken));
    assertAuthFailure(await withKey(tenant.apiKey));
    assert.equal((await probe(otherToken, tenant.supplier)).status, 200);
  });

  test('tokens stay valid across a restart: a new store connection, token service and app accept them', async () => {
    const tenant = await createTenant(t);
    // On PostgreSQL this is a second pool, as a restarted or second instance would open; PGlite
    // in memory cannot be reopened, so the second app shares the store object.
    const store = t.store.kind === 'postgres' ? await openStore({ databaseUrl: t.config.databaseUrl, poolSize: 2 }) : t.store;
    const tokens = await createTokenService({ db: store.db, directory: storeDirectory(store.db), clock: t.clock }, t.config);
    const app = await buildApp({ modules: { ...t.modules, store, db: store.db, tokens } });
    addProbeRoutes(app, store.db, tokens);
    after(async () => {
      await app.close();
      if (store !== t.store) await store.close();
    });
    const res = await call(app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { token: tenant.token });
    assert.equal(res.status, 200);
    const refreshed = await tokens.obtainWithRefreshToken((await t.tokens.obtainWithApiKey(tenant.apiKey)).refreshToken);
    assert.equal((await probe(refreshed.token, tenant.supplier)).status, 200, 'and the first instance accepts the second one\'s');
  });
});

describe('tenancy: another organisation\'s supplier is an unknown supplier', () => {
  test('GET: 404, the same body as for a code that does not exist', async () => {
    const mine = await createTenant(t);
    const theirs = await createTenant(t);
    const foreign = await probe(mine.token, theirs.supplier);
    const missing = await probe(mine.token, theirs.supplier.replace('SUP', 'NOPE'));
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.json, { detail: `No import supplier with code "${theirs.supplier}".`, code: 'not_found' });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.detail.replace('NOPE', 'SUP'), foreign.json.detail);
  });

  test('write: 400 import_supplier_not_found at import_supplier', async () => {
    const mine = await createTenant(t);
    const theirs = await createTenant(t);
    const res = await call(t.app, 'POST', `${PROBE}/suppliers/`, { token: mine.token, body: { import_supplier: theirs.supplier } });
    assert.equal(res.status, 400);
    const detail = `No import supplier with code "${theirs.supplier}".`;
    assert.deepEqual(res.json, {
      detail, code: 'import_supplier_not_found', errors: [{ detail, code: 'import_supplier_not_found', attr: 'import_supplier' }],
    });
    const own = await call(t.app, 'POST', `${PROBE}/suppliers/`, { token: mine.token, body: { import_supplier: mine.supplier } });
    assert.deepEqual(own.json, { code: mine.supplier });
  });

  test('a supplier code is case-sensitive', async () => {
    const tenant = await createTenant(t, {});
    const code = unique('CaseSup');
    await admin.createSupplier(t.store.db, code, tenant.organisation);
    assert.equal((await probe(tenant.token, code)).status, 200);
    assert.equal((await probe(tenant.token, code.toLowerCase())).status, 404);
  });
});
