import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

const t = await buildTestApp();

describe('operational endpoints', () => {
  test('healthz and readyz answer without auth', async () => {
    assert.deepEqual((await call(t.app, 'GET', '/healthz')).json, { status: 'ok' });
    assert.deepEqual((await call(t.app, 'GET', '/readyz')).json, { status: 'ready' });
  });
});

describe('errors (D4)', () => {
  test('unknown path is a JSON 404', async () => {
    const res = await call(t.app, 'GET', '/nope');
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { detail: 'No route for GET /nope.', code: 'not_found' });
  });

  test('a token authenticates REST calls: the same /v1 path is 401 without one and reaches routing with one', async () => {
    const tenant = await createTenant(t);
    const url = '/v1/data-import/nothing-here/';
    const without = await call(t.app, 'GET', url);
    assert.deepEqual([without.status, without.json], [401, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' }]);
    const garbage = await call(t.app, 'GET', url, { token: 'not-a-token' });
    assert.deepEqual([garbage.status, garbage.json], [401, { detail: 'Invalid or revoked credentials.', code: 'authentication_failed' }]);
    const withToken = await call(t.app, 'GET', url, { token: tenant.token });
    assert.deepEqual([withToken.status, withToken.json], [404, { detail: `No route for GET ${url}.`, code: 'not_found' }]);
  });

  test('the guard covers the whole /v1 prefix: unknown paths, other versions of the path and wrong methods are 401 without a token', async () => {
    const tenant = await createTenant(t);
    const unauthenticated = { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' };
    for (const [method, url] of [['GET', '/v1'], ['GET', '/v1/'], ['GET', '/v1/anything'], ['POST', '/v1/other-api/x/'],
      ['GET', '/%761/data-import/nothing-here/'], ['DELETE', '/v1/data-import/account-transfer-status/S/E/']] as const) {
      const res = await call(t.app, method, url);
      assert.deepEqual([res.status, res.json], [401, unauthenticated], `${method} ${url}`);
    }
    const wrongMethod = await call(t.app, 'DELETE', '/v1/data-import/account-transfer-status/S/E/', { token: tenant.token });
    assert.deepEqual([wrongMethod.status, wrongMethod.json], [405, { detail: 'Method "DELETE" not allowed.', code: 'method_not_allowed' }]);
  });
});
