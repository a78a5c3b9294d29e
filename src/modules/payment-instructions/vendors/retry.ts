import { setTimeout as sleep } from 'node:timers/promises';
import { unavailable, type PaymentVendorClient, type VendorInstruction } from './vendor.ts';

// Retries inside the request (D9) for answers that may change on their own: a timeout, a refused
// connection, a 5xx. Bounded twice: each try by the vendor's timeout_ms, and the whole call, tries and
// backoff together, by VENDOR_CALL_LIMIT_MS. A migration record waits for its vendor call on a worker;
// a vendor that never answers must give that worker back long before the record's own limit
// (JOB_RECORD_TIMEOUT_SECONDS, default 300 s), whatever its timeout_ms (up to 120 s) says.

/** The most a vendor call may take in all, every try and backoff included. */
export const VENDOR_CALL_LIMIT_MS = 30_000;
/** A try's limit for a vendor without a usable timeout_ms (the column's default). */
export const DEFAULT_VENDOR_TIMEOUT_MS = 5_000;
/** A try is not started with less than this left of the call's limit: it could only time out. */
const LEAST_TRY_MS = 100;

export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** One try's limit. */
  timeoutMs: number;
  /** The whole call's limit. */
  limitMs: number;
}

/**
 * Backoff scales with the vendor's own timeout (a fast vendor is retried quickly): a tenth of it,
 * between 10 ms and 250 ms, doubling per attempt. With the default 5 s timeout the worst case is
 * 3 × 5 s + 0.25 s + 0.5 s; a vendor whose tries cannot all fit gets fewer of them.
 */
export function retryPolicyFor(timeoutMs: number | null | undefined): RetryPolicy {
  const perTry = timeoutMs !== null && timeoutMs !== undefined && timeoutMs > 0
    ? Math.min(timeoutMs, VENDOR_CALL_LIMIT_MS) : DEFAULT_VENDOR_TIMEOUT_MS;
  return {
    attempts: 3, baseDelayMs: Math.min(250, Math.max(10, Math.round(perTry / 10))), maxDelayMs: 2_000,
    timeoutMs: perTry, limitMs: VENDOR_CALL_LIMIT_MS,
  };
}

/** Delay before retry n (1-based): base × 2^(n-1), capped, with jitter in [50%, 100%] so callers spread. */
export function backoffDelay(policy: RetryPolicy, retry: number): number {
  const full = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.round(full / 2 + Math.random() * (full / 2));
}

export function withRetries(client: PaymentVendorClient, policy: RetryPolicy): PaymentVendorClient {
  return {
    async fetchInstruction(reference: string): Promise<VendorInstruction> {
      const deadline = Date.now() + policy.limitMs;
      let result = await tryWithin(client, reference, policy, deadline);
      let tries = 1;
      for (; tries < policy.attempts; tries++) {
        if (result.outcome !== 'unavailable' || !result.transient) return result;
        const delay = backoffDelay(policy, tries);
        if (deadline - Date.now() - delay < LEAST_TRY_MS) break;
        await sleep(delay);
        result = await tryWithin(client, reference, policy, deadline);
      }
      if (result.outcome === 'unavailable' && result.transient && tries > 1) {
        return { ...result, detail: `${result.detail} (${tries} attempts)` };
      }
      return result;
    },
  };
}

/**
 * One try, limited to what is left of the call's limit. The client is told its limit, and the try is
 * also abandoned at the deadline whatever the client does with it (a kind whose library ignored it).
 */
async function tryWithin(client: PaymentVendorClient, reference: string, policy: RetryPolicy, deadline: number): Promise<VendorInstruction> {
  const left = deadline - Date.now();
  const controller = new AbortController();
  const late = sleep(left + LEAST_TRY_MS, undefined, { signal: controller.signal }).then(
    () => unavailable(`Payment vendor call gave up after ${policy.limitMs} ms, the most a vendor call may take.`),
    () => undefined as never,
  );
  try {
    return await Promise.race([client.fetchInstruction(reference, { timeoutMs: Math.min(policy.timeoutMs, left) }), late]);
  } finally {
    controller.abort();
  }
}
