import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { openStore } from '../../src/db/store.ts';
import { createTokenService } from '../../src/modules/auth/index.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { addProbeRoutes, PROBE } from '../support/probe-routes.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// Tokens under hostile use (issue #14): a correctly signed token without `exp` is refused, two
// Authorization headers are a 400 whichever comes first, and refresh tokens rotate on use: a used
// one presented again revokes its whole family, so a stolen one is noticed at the owner's next use.
const t = await buildTestApp();
addProbeRoutes(t.app, t.store.db, t.tokens);
await t.app.listen({ host: '127.0.0.1', port: 0 });
const port = (t.app.server.address() as AddressInfo).port;

/** A raw HTTP GET; a header given as a list is sent once per value. */
function rawGet(path: string, authorization: string[]): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', headers: { Authorization: authorization } as Record<string, string[]> }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { text += chunk; });
      res.on('end', () => { try { resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }); } catch { reject(new Error(`${res.statusCode} ${text}`)); } });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The token's own claims with other dates (`undefined` leaves a claim out), signed with the service's key. */
async function resign(token: string, dates: { iat: number | undefined; exp: number }): Promise<string> {
  const { value } = await t.store.db.selectFrom('settings').select('value').where('name', '=', 'token_signing_key').executeTakeFirstOrThrow();
  const { iat: _iat, exp: _exp, ...claims } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
  const jwt = new SignJWT({ ...claims, ...(dates.iat === undefined ? {} : { iat: dates.iat }) }).setProtectedHeader({ alg: 'HS256' });
  return jwt.setExpirationTime(dates.exp).sign(new TextEncoder().encode(value));
}

describe('token hardening', () => {
  test('a correctly signed access token without exp is 401 authentication_failed', async () => {
    const tenant = await createTenant(t);
    const claims = JSON.parse(Buffer.from(tenant.token.split('.')[1]!, 'base64url').toString());
    const { value } = await t.store.db.selectFrom('settings').select('value').where('name', '=', 'token_signing_key').executeTakeFirstOrThrow();
    const forever = await new SignJWT({ typ: 'access', key: claims.key }).setProtectedHeader({ alg: 'HS256' })
      .setSubject(claims.sub).setIssuer(claims.iss).setIssuedAt().sign(new TextEncoder().encode(value));
    const withExp = await new SignJWT({ typ: 'access', key: claims.key }).setProtectedHeader({ alg: 'HS256' })
      .setSubject(claims.sub).setIssuer(claims.iss).setIssuedAt().setExpirationTime('10m').sign(new TextEncoder().encode(value));
    assert.equal((await call(t.app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { token: withExp })).status, 200, 'the same token with exp is fine');
    const res = await call(t.app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { token: forever });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json, { detail: 'Invalid or revoked credentials.', code: 'authentication_failed' });
  });

  test('correctly signed tokens with odd dates: exp beyond the lifetime from iat, iat in the future, no iat: 401 authentication_failed', async () => {
    const tenant = await createTenant(t);
    const now = Math.floor(Date.now() / 1000);
    const ttl = t.config.tokenTtlSeconds;
    const probe = (token: string) => call(t.app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { token });
    const accepted = [
      ['the lifetime exactly', { iat: now, exp: now + ttl }],
      ['issued 30 s ahead (clock skew)', { iat: now + 30, exp: now + 30 + ttl }],
      ['a shorter life', { iat: now - 10, exp: now + 60 }],
    ] as const;
    for (const [name, dates] of accepted) assert.equal((await probe(await resign(tenant.token, dates))).status, 200, name);
    const refused = [
      ['expiring in 100 years', { iat: now, exp: now + 100 * 365 * 86_400 }],
      ['one second over the lifetime', { iat: now, exp: now + ttl + 1 }],
      ['issued an hour ahead', { iat: now + 3600, exp: now + 3600 + ttl }],
      ['issued 2 minutes ahead', { iat: now + 120, exp: now + 120 }],
      ['no iat', { iat: undefined, exp: now + 600 }],
    ] as const;
    for (const [name, dates] of refused) {
      const res = await probe(await resign(tenant.token, dates));
      assert.deepEqual([res.status, res.json], [401, { detail: 'Invalid or revoked credentials.', code: 'authentication_failed' }], name);
    }
  });

  test('a refresh token with odd dates is refused by obtainToken, and the token stays unused', async () => {
    const tenant = await createTenant(t);
    const now = Math.floor(Date.now() / 1000);
    const ttl = t.config.refreshTokenTtlSeconds;
    for (const dates of [{ iat: now, exp: now + 100 * 365 * 86_400 }, { iat: now + 3600, exp: now + 3600 + 600 }, { iat: undefined, exp: now + 600 }]) {
      const pair = await withKey(tenant.apiKey);
      assertRefused(await withRefresh(await resign(pair.refreshToken, dates)));
      assert.deepEqual((await familyRows(pair.refreshToken)).map((r) => [r.used_at, r.revoked_at]), [[null, null]], JSON.stringify(dates));
      assert.notEqual((await withRefresh(await resign(pair.refreshToken, { iat: now, exp: now + ttl }))).data.obtainToken, null,
        'the same token with its own lifetime is taken');
    }
  });

  test('two Authorization headers: 400, whether the first or the second is the good one', async () => {
    const tenant = await createTenant(t);
    const good = `Token ${tenant.token}`;
    for (const pair of [[good, 'Token forged'], ['Token forged', good], [good, good]]) {
      const res = await rawGet(`${PROBE}/suppliers/${tenant.supplier}/`, pair);
      assert.equal(res.status, 400, JSON.stringify(pair));
      assert.deepEqual(res.json, { detail: 'Send exactly one Authorization header.', code: 'invalid' });
    }
    const one = await rawGet(`${PROBE}/suppliers/${tenant.supplier}/`, [good]);
    assert.equal(one.status, 200);
  });
});

const obtain = async (input: string) => {
  const res = await call(t.app, 'POST', '/graphql', { body: { query: `mutation { obtainToken(input: ${input}) { token refreshToken } }` } });
  assert.equal(res.status, 200, res.body);
  return res.json as { data: { obtainToken: { token: string; refreshToken: string } | null }; errors?: any[] };
};
const withKey = async (key: string) => (await obtain(`{APIKey: ${JSON.stringify(key)}}`)).data.obtainToken!;
const withRefresh = (token: string) => obtain(`{refreshToken: ${JSON.stringify(token)}}`);
/** The whole failure, as a client sees it: no pair, one error with its code. */
function assertRefused(res: Awaited<ReturnType<typeof withRefresh>>) {
  assert.deepEqual(res.data, { obtainToken: null });
  assert.deepEqual(res.errors?.map((e) => [e.message, e.extensions, e.path]), [['Invalid or revoked credentials.', { code: 'authentication_failed' }, ['obtainToken']]]);
}
const jtiOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).jti;
const familyRows = async (refreshToken: string) => {
  const { family_id: family } = await t.store.db.selectFrom('refresh_tokens').select('family_id').where('jti', '=', jtiOf(refreshToken)).executeTakeFirstOrThrow();
  return t.store.db.selectFrom('refresh_tokens').select(['jti', 'used_at', 'revoked_at']).where('family_id', '=', family).orderBy('issued_at').execute();
};

describe('refresh tokens rotate on use', () => {
  test('each use returns a new refresh token; a used one presented again fails and revokes the family, descendants too', async () => {
    const tenant = await createTenant(t);
    const first = await withKey(tenant.apiKey);
    const second = (await withRefresh(first.refreshToken)).data.obtainToken!;
    assert.notEqual(second.refreshToken, first.refreshToken);
    const third = (await withRefresh(second.refreshToken)).data.obtainToken!;
    assert.equal((await call(t.app, 'GET', `${PROBE}/suppliers/${tenant.supplier}/`, { token: third.token })).status, 200);
    const otherSession = await withKey(tenant.apiKey);

    // The thief replays the first token: refused, and the owner's current one dies with it.
    assertRefused(await withRefresh(first.refreshToken));
    assertRefused(await withRefresh(third.refreshToken));
    assertRefused(await withRefresh(second.refreshToken));
    const rows = await familyRows(first.refreshToken);
    assert.deepEqual(rows.map((r) => [r.jti, r.used_at !== null, r.revoked_at !== null]), [
      [jtiOf(first.refreshToken), true, true], [jtiOf(second.refreshToken), true, true], [jtiOf(third.refreshToken), false, true],
    ]);
    // Another session of the same key is another family: untouched.
    assert.notEqual((await withRefresh(otherSession.refreshToken)).data.obtainToken, null);
  });

  test('the same refresh token presented twice at once: one pair at most, and the family is revoked', async () => {
    const tenant = await createTenant(t);
    const pair = await withKey(tenant.apiKey);
    const answers = await Promise.all([withRefresh(pair.refreshToken), withRefresh(pair.refreshToken)]);
    const issued = answers.filter((a) => a.data.obtainToken !== null);
    assert.equal(issued.length, 1, JSON.stringify(answers));
    assertRefused(answers.find((a) => a.data.obtainToken === null)!);
    // The winner's successor belongs to the revoked family (or was issued after the revocation, and
    // is refused at its first use): either way it no longer refreshes.
    assertRefused(await withRefresh(issued[0]!.data.obtainToken!.refreshToken));
  });

  test('rotation holds across instances: used on one, replayed on another, refused there', async () => {
    const tenant = await createTenant(t);
    // On PostgreSQL a second pool, as a second instance would open; PGlite in memory is one store.
    const store = t.store.kind === 'postgres' ? await openStore({ databaseUrl: t.config.databaseUrl, poolSize: 2 }) : t.store;
    after(async () => { if (store !== t.store) await store.close(); });
    const other = await createTokenService({ db: store.db, directory: storeDirectory(store.db), clock: t.clock }, t.config);
    const pair = await withKey(tenant.apiKey);
    const next = await other.obtainWithRefreshToken(pair.refreshToken);
    assertRefused(await withRefresh(pair.refreshToken));
    await assert.rejects(other.obtainWithRefreshToken(next.refreshToken), { code: 'authentication_failed' });
  });

  test('a correctly signed refresh token the service never issued is refused', async () => {
    const tenant = await createTenant(t);
    const claims = JSON.parse(Buffer.from(tenant.token.split('.')[1]!, 'base64url').toString());
    const { value } = await t.store.db.selectFrom('settings').select('value').where('name', '=', 'token_signing_key').executeTakeFirstOrThrow();
    const minted = await new SignJWT({ typ: 'refresh', key: claims.key }).setProtectedHeader({ alg: 'HS256' }).setSubject(claims.sub)
      .setIssuer(claims.iss).setIssuedAt().setJti('never-issued').setExpirationTime('10m').sign(new TextEncoder().encode(value));
    assertRefused(await withRefresh(minted));
  });
});
