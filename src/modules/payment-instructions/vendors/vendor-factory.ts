import { createHttpVendorClient } from './http-vendor.ts';
import { retryPolicyFor, withRetries, type RetryPolicy } from './retry.ts';
import { createStripeVendorClient } from './stripe-vendor.ts';
import type { PaymentVendor, PaymentVendorClient } from './vendor.ts';

// From a payment_vendors row to a client that already retries. A new kind is one more case here
// (and in VENDOR_KINDS of the admin service, which the CLI checks).
export type VendorClientFactory = (vendor: PaymentVendor) => PaymentVendorClient;

export function createVendorClient(vendor: PaymentVendor, policy: RetryPolicy = retryPolicyFor(vendor.timeout_ms)): PaymentVendorClient {
  return withRetries(createBaseClient(vendor), policy);
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
