import { randomBytes } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../http/errors.ts';
import { findActiveApiKey, findApiKeyByPrefix } from '../admin/admin.repository.ts';
import { secretMatches, splitKey } from '../admin/api-keys.ts';

// Tokens are HS256 JWTs naming the organisation and the API key they came from. The signing key is
// TOKEN_SECRET when configured, otherwise one generated once and kept in the store, so every
// instance and every restart verifies the same tokens. A revoked key's tokens fail the guard,
// which looks the key up on each request.
const SIGNING_KEY_SETTING = 'token_signing_key';
const ISSUER = 'account-migration-import';

export interface Caller { organisationId: number; apiKeyId: number }

export interface TokenPair { token: string; expiresIn: number; refreshToken: string; refreshExpiresIn: number }

export interface TokenServiceOptions { tokenSecret?: string | undefined; tokenTtlSeconds: number; refreshTokenTtlSeconds: number }

export interface TokenService {
  obtainWithApiKey(apiKey: string): Promise<TokenPair>;
  obtainWithRefreshToken(refreshToken: string): Promise<TokenPair>;
  authenticate(token: string): Promise<Caller>;
}

export async function createTokenService(db: Kysely<Database>, options: TokenServiceOptions): Promise<TokenService> {
  // Imported once: given raw bytes, jose would import the key through WebCrypto on every sign and verify.
  const secret = await crypto.subtle.importKey('raw', new TextEncoder().encode(options.tokenSecret ?? await storedSigningKey(db)),
    { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  const failed = () => new AppError('authentication_failed', 'Invalid or revoked credentials.');

  async function issue(caller: Caller): Promise<TokenPair> {
    const sign = (typ: string, ttl: number) => new SignJWT({ typ, key: caller.apiKeyId })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(String(caller.organisationId))
      .setIssuer(ISSUER)
      .setIssuedAt()
      .setJti(randomBytes(9).toString('base64url'))
      .setExpirationTime(Math.floor(Date.now() / 1000) + ttl)
      .sign(secret);
    return {
      token: await sign('access', options.tokenTtlSeconds),
      expiresIn: options.tokenTtlSeconds,
      refreshToken: await sign('refresh', options.refreshTokenTtlSeconds),
      refreshExpiresIn: options.refreshTokenTtlSeconds,
    };
  }

  async function verify(token: string, typ: 'access' | 'refresh'): Promise<Caller> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, secret, { issuer: ISSUER, algorithms: ['HS256'] }));
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new AppError('token_expired', 'The token has expired; obtain a new one.');
      throw failed();
    }
    if (payload.typ !== typ || typeof payload.key !== 'number') throw failed();
    const key = await findActiveApiKey(db, payload.key);
    if (!key || String(key.organisation_id) !== payload.sub) throw failed();
    return { organisationId: key.organisation_id, apiKeyId: key.id };
  }

  return {
    async obtainWithApiKey(apiKey) {
      const parts = splitKey(apiKey);
      const row = parts ? await findApiKeyByPrefix(db, parts.prefix) : undefined;
      if (!parts || !row || row.revoked_at !== null || !secretMatches(parts.secret, row.secret_hash)) throw failed();
      return issue({ organisationId: row.organisation_id, apiKeyId: row.id });
    },
    async obtainWithRefreshToken(refreshToken) {
      return issue(await verify(refreshToken, 'refresh'));
    },
    authenticate: (token) => verify(token, 'access'),
  };
}

async function storedSigningKey(db: Kysely<Database>): Promise<string> {
  // Insert-if-absent then read: instances starting together agree on the first key written.
  await db.insertInto('settings').values({ name: SIGNING_KEY_SETTING, value: randomBytes(48).toString('base64url') })
    .onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('settings').select('value').where('name', '=', SIGNING_KEY_SETTING).executeTakeFirstOrThrow();
  return row.value;
}
