import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { buildApp } from '../../src/app.ts';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, createTenant, type Tenant } from '../support/test-app.ts';

// Guessing API keys at POST /graphql: failures are counted per client address and per key prefix
// over a minute, in the store; past a limit the credential is not even checked (429). And one
// request cannot carry a pile of guesses through aliases.
const t = await buildTestApp({ AUTH_FAILURES_PER_ADDRESS: '5', AUTH_FAILURES_PER_KEY: '3' });
let nextAddress = 1;
const freshAddress = () => `10.9.0.${nextAddress++}`;

async function obtain(key: string, address: string, app: FastifyInstance = t.app) {
  const res = await app.inject({
    method: 'POST', url: '/graphql', remoteAddress: address,
    payload: { query: 'mutation ($key: String!) { obtainToken(input: {APIKey: $key}) { expiresIn } }', variables: { key } },
  });
  return { status: res.statusCode, json: res.json(), retryAfter: res.headers['retry-after'] };
}

const wrongSecret = (tenant: Tenant) => `${tenant.apiKey.split('.')[0]}.${'x'.repeat(43)}`;
const FAILED = {
  data: { obtainToken: null },
  errors: [{ message: 'Invalid or revoked credentials.', locations: [{ line: 1, column: 28 }], path: ['obtainToken'], extensions: { code: 'authentication_failed' } }],
};
const throttled = (what: string, seconds: string) => ({
  data: { obtainToken: null },
  errors: [{ message: `Too many failed authentications ${what}; retry in ${seconds} seconds.`, locations: [{ line: 1, column: 28 }], path: ['obtainToken'], extensions: { code: 'too_many_requests' } }],
});

function assertThrottled(res: Awaited<ReturnType<typeof obtain>>, what: string): void {
  assert.equal(res.status, 429);
  assert.match(res.retryAfter as string, /^\d+$/);
  assert.ok(Number(res.retryAfter) >= 1 && Number(res.retryAfter) <= 60, `Retry-After ${res.retryAfter}`);
  assert.deepEqual(res.json, throttled(what, res.retryAfter as string));
}

describe('failed authentications are throttled', () => {
  test('per key prefix, from any address: past 3 failures even the right key is refused; other keys go on', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    for (let i = 0; i < 3; i++) assert.deepEqual(await obtain(wrongSecret(tenant), freshAddress()), { status: 200, json: FAILED, retryAfter: undefined });
    assertThrottled(await obtain(tenant.apiKey, freshAddress()), 'with this API key');
    assert.deepEqual(await obtain(other.apiKey, freshAddress()), { status: 200, json: { data: { obtainToken: { expiresIn: 3600 } } }, retryAfter: undefined });
  });

  test('per client address, whatever the keys: past 5 failures the address is refused; another address goes on', async () => {
    const tenant = await createTenant(t);
    const address = freshAddress();
    for (let i = 0; i < 5; i++) assert.equal((await obtain(`ak_${String(i).padStart(12, '0')}.nope`, address)).status, 200);
    assertThrottled(await obtain(tenant.apiKey, address), 'from this address');
    assert.equal((await obtain(tenant.apiKey, freshAddress())).json.data.obtainToken.expiresIn, 3600);
  });

  test('the counts are in the store: another instance over it refuses the same address', async () => {
    const address = freshAddress();
    for (let i = 0; i < 5; i++) await obtain('garbage', address);
    const second = await buildApp({ modules: t.modules });
    after(() => second.close());
    assertThrottled(await obtain('garbage', address, second), 'from this address');
  });
});

describe('one request, many guesses', () => {
  test('more than 5 root fields (aliases included) or 5 operations: 400 invalid before anything runs', async () => {
    const address = freshAddress();
    const aliases = Array.from({ length: 6 }, (_, i) => `a${i}: obtainToken(input: {APIKey: "ak_000000000000.x${i}"}) { expiresIn }`).join(' ');
    const res = await t.app.inject({ method: 'POST', url: '/graphql', remoteAddress: address, payload: { query: `mutation { ${aliases} }` } });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json(), {
      errors: [{ message: 'A request may select at most 5 root fields, aliases included.', locations: [{ line: 1, column: 357 }], extensions: { code: 'invalid' } }],
    });
    const operations = Array.from({ length: 6 }, (_, i) => `query Q${i} { apiVersion }`).join(' ');
    const many = await t.app.inject({ method: 'POST', url: '/graphql', payload: { query: operations, operationName: 'Q0' } });
    assert.equal(many.statusCode, 400);
    assert.deepEqual(many.json().errors.map((e: any) => [e.message, e.extensions.code]), [
      ['A request may hold at most 5 operations.', 'invalid'],
      ['A request may select at most 5 root fields, aliases included.', 'invalid'],
    ]);
    // Nothing ran, so nothing was counted: the address is not throttled.
    for (let i = 0; i < 5; i++) assert.equal((await obtain('garbage', address)).status, 200);
  });
});
