import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// An API key is `<prefix>.<secret>`. The prefix (public, unique) finds the key and names it for
// revocation; only a SHA-256 of the secret is stored. Secrets are 32 random bytes, so a plain hash
// is enough: there is nothing to brute-force.
export interface NewKey { prefix: string; secret: string; key: string; secretHash: string }

export function generateKey(): NewKey {
  const prefix = `ak_${randomBytes(6).toString('hex')}`;
  const secret = randomBytes(32).toString('base64url');
  return { prefix, secret, key: `${prefix}.${secret}`, secretHash: hashSecret(secret) };
}

export function splitKey(key: string): { prefix: string; secret: string } | null {
  const match = /^(ak_[0-9a-f]{12})\.([A-Za-z0-9_-]{43})$/.exec(key);
  return match ? { prefix: match[1]!, secret: match[2]! } : null;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
