import { vendorLatency } from '../../../core/process-metrics.ts';
import { createHttpVendorClient } from './http-vendor.ts';
import { retryPolicyFor, withRetries, type RetryPolicy } from './retry.ts';
import { createStripeVendorClient } from './stripe-vendor.ts';
import type { PaymentVendor, PaymentVendorClient } from './vendor.ts';

// From a payment_vendors row to a client that already retries. A new kind is one more case here
// (and in VENDOR_KINDS of the admin service, which the CLI checks).

export function createVendorClient(vendor: PaymentVendor, policy: RetryPolicy = retryPolicyFor(vendor.timeout_ms)): PaymentVendorClient {
  return timed(vendor, withRetries(createBaseClient(vendor), policy));
}

/** Every look-up's latency on /metrics (payment_vendor_request_duration_seconds), as the caller waited for it. */
function timed(vendor: PaymentVendor, client: PaymentVendorClient): PaymentVendorClient {
  return {
    async fetchInstruction(reference) {
      const stop = vendorLatency.startTimer({ vendor: vendor.code });
      let outcome = 'error';
      try {
        const result = await client.fetchInstruction(reference);
        outcome = result.outcome;
        return result;
      } finally {
        stop({ outcome });
      }
    },
  };
}

function createBaseClient(vendor: PaymentVendor): PaymentVendorClient {
  switch (vendor.kind) {
    case 'http':
      return createHttpVendorClient(vendor);
    case 'stripe':
      return createStripeVendorClient(vendor);
    default:
      // Rows are checked by the CLI; a kind this build does not know is a deployment mistake.
      throw new Error(`payment vendor "${vendor.code}" has unknown kind "${vendor.kind}"`);
  }
}
