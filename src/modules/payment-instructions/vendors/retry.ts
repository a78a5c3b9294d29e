import { setTimeout as sleep } from 'node:timers/promises';
import type { PaymentVendorClient, VendorInstruction } from './vendor.ts';

// Retries inside the request (D9) for answers that may change on their own: a timeout, a refused
// connection, a 5xx. Bounded: at most `attempts` calls, each capped by the vendor's timeout_ms, with
// exponential backoff between them, so the worst case is attempts × timeout + the backoff sum.
export interface RetryPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * Backoff scales with the vendor's own timeout (a fast vendor is retried quickly): a tenth of it,
 * between 10 ms and 250 ms, doubling per attempt. With the default 5 s timeout the worst case is
 * 3 × 5 s + 0.25 s + 0.5 s.
 */
export function retryPolicyFor(timeoutMs: number): RetryPolicy {
  return { attempts: 3, baseDelayMs: Math.min(250, Math.max(10, Math.round(timeoutMs / 10))), maxDelayMs: 2_000 };
}

/** Delay before retry n (1-based): base × 2^(n-1), capped, with jitter in [50%, 100%] so callers spread. */
export function backoffDelay(policy: RetryPolicy, retry: number): number {
  const full = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.round(full / 2 + Math.random() * (full / 2));
}

export function withRetries(client: PaymentVendorClient, policy: RetryPolicy): PaymentVendorClient {
  return {
    async fetchInstruction(reference: string): Promise<VendorInstruction> {
      let result = await client.fetchInstruction(reference);
      for (let attempt = 2; attempt <= policy.attempts; attempt++) {
        if (result.outcome !== 'unavailable' || !result.transient) return result;
        await sleep(backoffDelay(policy, attempt - 1));
        result = await client.fetchInstruction(reference);
      }
      if (result.outcome === 'unavailable' && result.transient && policy.attempts > 1) {
        return { ...result, detail: `${result.detail} (${policy.attempts} attempts)` };
      }
      return result;
    },
  };
}
