import { randomBytes } from 'node:crypto';
import { createSigner, createVerifier } from 'fast-jwt';
import type { Kysely, Transaction } from 'kysely';
import type { Database, Supplier } from '../../db/schema.ts';
import type { Caller } from '../../core/caller.ts';
import type { Clock } from '../../core/clock.ts';
import type { Directory } from '../../core/directory.ts';
import { AppError } from '../../core/errors.ts';
import { findApiKeyByPrefix } from '../admin/index.ts';
import { secretMatches, splitKey } from '../admin/index.ts';
import { insertRefreshToken, revokeFamily, useRefreshToken } from './refresh-tokens.repository.ts';

// Tokens are HS256 JWTs naming the organisation and the API key they came from. The signing key is
// TOKEN_SECRET when configured, otherwise one generated once and kept in the store, so every
// instance and every restart verifies the same tokens. A revoked key's tokens fail the guard, which
// looks the key up on each request in the instance's directory (core/directory.ts: in memory, and
// told of a revocation by the store on commit). Refresh tokens rotate on use, with their state in the
// store (migration 008), so that rotation and reuse detection hold across instances.
const SIGNING_KEY_SETTING = 'token_signing_key';
const ISSUER = 'account-migration-import';
/** How far ahead of this instance's clock another instance's clock may be when it signs a token. */
const CLOCK_SKEW_SECONDS = 60;

export interface TokenPair { token: string; expiresIn: number; refreshToken: string; refreshExpiresIn: number }

export interface TokenServiceOptions { tokenSecret?: string | undefined; tokenTtlSeconds: number; refreshTokenTtlSeconds: number }

/** The parts of a Caller a token carries; the service adds the directory lookups. */
type Identity = Pick<Caller, 'organisationId' | 'apiKeyId'>;

export interface TokenService {
  obtainWithApiKey(apiKey: string): Promise<TokenPair>;
  obtainWithRefreshToken(refreshToken: string): Promise<TokenPair>;
  authenticate(token: string): Promise<Caller>;
}

export interface TokenServiceDeps {
  db: Kysely<Database>;
  directory: Directory;
  /** Issue times and expiry are read from it, not from fast-jwt's own Date.now(). */
  clock: Clock;
}

export async function createTokenService({ db, directory, clock }: TokenServiceDeps, options: TokenServiceOptions): Promise<TokenService> {
  // HS256 with node's synchronous HMAC (fast-jwt): a verification is a few microseconds of CPU on
  // the request's own turn, not an asynchronous WebCrypto job per request.
  const secret = options.tokenSecret ?? await storedSigningKey(db);
  const signToken = createSigner({ key: secret, algorithm: 'HS256' });
  // A token without `exp` would be valid forever: the claim is required, and `iat` with it (the
  // lifetime is measured from it: datesPlausible below). A client sends the same token with every
  // request for up to an hour, so fast-jwt keeps the tokens it verified (an LRU of 10,000 keyed by
  // the token's hash, each entry until the token's own `exp` or 10 minutes): checking
  // the signature and decoding the claims again each time was about 7% of validate-account's CPU.
  // Only what the signature proves is kept; the key's state is looked up on every request below, so
  // a revocation still cuts its tokens off at once. Expiry is checked below against the service's
  // clock on every call, cached or not (fast-jwt would read Date.now()); a cached entry lives at most
  // fast-jwt's 10 minutes.
  const verifyToken = createVerifier({
    key: secret, algorithms: ['HS256'], allowedIss: ISSUER, requiredClaims: ['exp', 'iat'], ignoreExpiration: true, cache: 10_000,
  });
  const failed = () => new AppError('authentication_failed');

  // Each refresh token is a row (refresh-tokens.repository.ts) in a family that starts at an API key:
  // trading one marks it used and issues its successor; a used one presented again revokes the family.
  async function issue(executor: Kysely<Database> | Transaction<Database>, caller: Identity, familyId: string): Promise<TokenPair> {
    const now = Math.floor(clock.nowMs() / 1000);
    const sign = (typ: string, jti: string, exp: number): string =>
      signToken({ typ, key: caller.apiKeyId, sub: String(caller.organisationId), iss: ISSUER, iat: now, jti, exp });
    const refreshJti = randomBytes(16).toString('base64url');
    const refreshExp = now + options.refreshTokenTtlSeconds;
    await insertRefreshToken(executor, { jti: refreshJti, familyId, apiKeyId: caller.apiKeyId, expiresAt: new Date(refreshExp * 1000) }, new Date(now * 1000));
    return {
      token: sign('access', randomBytes(9).toString('base64url'), now + options.tokenTtlSeconds),
      expiresIn: options.tokenTtlSeconds,
      refreshToken: sign('refresh', refreshJti, refreshExp),
      refreshExpiresIn: options.refreshTokenTtlSeconds,
    };
  }

  async function verify(token: string, typ: 'access' | 'refresh'): Promise<Identity & { jti: string | undefined }> {
    let payload: { typ?: unknown; key?: unknown; sub?: unknown; jti?: string; iat?: unknown; exp?: unknown };
    try {
      payload = verifyToken(token);
    } catch {
      throw failed();
    }
    // Valid up to and including its `exp` second, as fast-jwt's own check was; expiry is told apart
    // before anything else, as it was then.
    const nowMs = clock.nowMs();
    if (typeof payload.exp !== 'number') throw failed();
    if (nowMs > payload.exp * 1000) throw new AppError('token_expired');
    if (payload.typ !== typ || typeof payload.key !== 'number') throw failed();
    if (!datesPlausible(payload, typ === 'access' ? options.tokenTtlSeconds : options.refreshTokenTtlSeconds, nowMs)) throw failed();
    const key = await directory.activeKey(payload.key);
    if (!key || String(key.organisation_id) !== payload.sub) throw failed();
    return { organisationId: key.organisation_id, apiKeyId: key.id, jti: payload.jti };
  }

  return {
    async obtainWithApiKey(apiKey) {
      const parts = splitKey(apiKey);
      const row = parts ? await findApiKeyByPrefix(db, parts.prefix) : undefined;
      if (!parts || !row || row.revoked_at !== null || !secretMatches(parts.secret, row.secret_hash)) throw failed();
      return issue(db, { organisationId: row.organisation_id, apiKeyId: row.id }, randomBytes(16).toString('base64url'));
    },
    async obtainWithRefreshToken(refreshToken) {
      const { jti, ...caller } = await verify(refreshToken, 'refresh');
      if (jti === undefined) throw failed();
      const outcome = await db.transaction().execute(async (trx) => {
        const use = await useRefreshToken(trx, jti);
        return use.kind === 'fresh' ? { kind: 'issued' as const, pair: await issue(trx, caller, use.familyId) } : use;
      });
      if (outcome.kind === 'issued') return outcome.pair;
      // Revoked after the rotation's transaction, so that a failure answer cannot roll it back.
      if (outcome.kind === 'reused') await revokeFamily(db, outcome.familyId);
      throw failed();
    },
    async authenticate(token) {
      const { organisationId, apiKeyId } = await verify(token, 'access');
      return new DirectoryCaller(organisationId, apiKeyId, directory);
    },
  };
}

/**
 * The caller a token names, its suppliers found in the directory. A class rather than an object with
 * an arrow function: every request makes one, and tsx names each such function as it is made
 * (esbuild's keepNames, an Object.defineProperty per request).
 */
class DirectoryCaller implements Caller {
  constructor(readonly organisationId: number, readonly apiKeyId: number, private readonly directory: Directory) {}

  findSupplier(code: string): Promise<Supplier | undefined> {
    return this.directory.supplier(this.organisationId, code);
  }
}

/**
 * A token this service signed lives exactly its configured lifetime from `iat`, and was issued no
 * later than now (give or take another instance's clock). A correctly signed token that claims more
 * (an `exp` a century away, an `iat` in the future) was not made by `issue`: the signing key leaked,
 * or a lifetime was shortened since. fast-jwt checks only that `exp` has not passed.
 */
function datesPlausible(payload: { iat?: unknown; exp?: unknown }, lifetimeSeconds: number, nowMs: number): boolean {
  const { iat, exp } = payload;
  if (typeof iat !== 'number' || typeof exp !== 'number') return false;
  return iat <= nowMs / 1000 + CLOCK_SKEW_SECONDS && exp - iat <= lifetimeSeconds;
}

async function storedSigningKey(db: Kysely<Database>): Promise<string> {
  // Insert-if-absent then read: instances starting together agree on the first key written.
  await db.insertInto('settings').values({ name: SIGNING_KEY_SETTING, value: randomBytes(48).toString('base64url') })
    .onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('settings').select('value').where('name', '=', SIGNING_KEY_SETTING).executeTakeFirstOrThrow();
  return row.value;
}
