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

  test('a token authenticates REST calls', async () => {
    const tenant = await createTenant(t);
    const res = await call(t.app, 'GET', `/v1/data-import/nothing-here/`, { token: tenant.token });
    assert.equal(res.status, 404);
  });
});
