import type { Kysely } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import { AppError } from '../../core/errors.ts';
import type { Database } from '../../db/schema.ts';
import { countFailures, deleteOldFailures, recordFailure, type ThrottleSubject } from './auth-throttle.repository.ts';

// Guessing API keys is slowed down by counting failed token requests per client address and per
// key prefix over a sliding minute, in the store (every instance sees the same counts). Past a limit
// the request is refused before its key is even looked at, so a right guess does not show either.
// The check and the count are two statements: concurrent requests may pass a limit by a few. The
// window is measured on the clock given (the process's), so a test moves it past instead of waiting.
export interface AuthThrottleLimits {
  /** Failures a minute from one client address before it is refused; 0: no limit. */
  perAddress: number;
  /** Failures a minute with one API key prefix (from any address); 0: no limit. */
  perKeyPrefix: number;
}

export interface AuthThrottle {
  /** Throws 429 too_many_requests, with Retry-After, when the address or the key prefix is over its limit. */
  check(address: string, apiKey: string | undefined): Promise<void>;
  recordFailure(address: string, apiKey: string | undefined): Promise<void>;
}

const WINDOW_SECONDS = 60;
// Old buckets are deleted by a failure now and then, not by each: one in this many.
const CLEANUP_EVERY = 100;

/** The prefix of a well-formed API key (`ak_<12 hex>.<secret>`); null for anything else. */
export function keyPrefixOf(apiKey: string | undefined): string | null {
  const prefix = apiKey?.split('.')[0] ?? '';
  return /^ak_[0-9a-f]{12}$/.test(prefix) ? prefix : null;
}

export function createAuthThrottle({ db, clock }: { db: Kysely<Database>; clock: Clock }, limits: AuthThrottleLimits): AuthThrottle {
  const subjectsOf = (address: string, apiKey: string | undefined): ThrottleSubject[] => {
    const prefix = keyPrefixOf(apiKey);
    return [
      ...(limits.perAddress > 0 ? [{ scope: 'address' as const, subject: address }] : []),
      ...(limits.perKeyPrefix > 0 && prefix ? [{ scope: 'key_prefix' as const, subject: prefix }] : []),
    ];
  };
  let failuresSeen = 0;
  return {
    async check(address, apiKey) {
      const subjects = subjectsOf(address, apiKey);
      if (subjects.length === 0) return;
      const over = (await countFailures(db, subjects, WINDOW_SECONDS, clock.now()))
        .filter((count) => count.failures >= (count.scope === 'address' ? limits.perAddress : limits.perKeyPrefix));
      if (over.length === 0) return;
      const retryAfter = Math.max(1, ...over.map((count) => count.retryAfterSeconds));
      const what = over.some((count) => count.scope === 'address') ? 'from this address' : 'with this API key';
      throw new AppError('too_many_requests', `Too many failed authentications ${what}; retry in ${retryAfter} seconds.`, {
        headers: { 'Retry-After': String(retryAfter) },
      });
    },
    async recordFailure(address, apiKey) {
      const subjects = subjectsOf(address, apiKey);
      if (subjects.length === 0) return;
      const now = clock.now();
      await recordFailure(db, subjects, now);
      if (++failuresSeen % CLEANUP_EVERY === 0) await deleteOldFailures(db, now);
    },
  };
}
