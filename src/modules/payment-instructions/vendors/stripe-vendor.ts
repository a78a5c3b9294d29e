import Stripe from 'stripe';
import {
  referenceSegment, unavailable, unsendableReference, type FetchOptions, type PaymentVendor, type PaymentVendorClient, type VendorInstruction,
} from './vendor.ts';

// Kind `stripe`: the reference is a Stripe PaymentMethod id (pm_…), fetched with the official SDK.
// The vendor's secret is the API key; its url gives only scheme, host and port (https://api.stripe.com
// in production, a local fake in tests). The SDK's own retries are off: retry.ts applies one policy
// to every kind, so timeouts and attempts are the same whatever the vendor.

// Only these fields of the method's type-specific object are kept: enough to show and recognise the
// instrument (brand, last 4 digits, expiry), never a number that could be charged.
const KEPT_FIELDS = [
  'brand', 'display_brand', 'last4', 'exp_month', 'exp_year', 'funding', 'country', 'wallet_type',
  'bank_name', 'bank_code', 'branch_code', 'account_type', 'account_holder_type',
] as const;

export function createStripeVendorClient(vendor: PaymentVendor): PaymentVendorClient {
  const base = new URL(vendor.url);
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  const stripe = vendor.secret
    ? new Stripe(vendor.secret, {
      host: base.hostname,
      port: base.port ? Number(base.port) : protocol === 'http' ? 80 : 443,
      protocol,
      timeout: vendor.timeout_ms,
      maxNetworkRetries: 0,
      telemetry: false,
    })
    : undefined;

  return {
    async fetchInstruction(reference: string, options: FetchOptions = {}): Promise<VendorInstruction> {
      if (!stripe) return { outcome: 'rejected', detail: `Payment vendor "${vendor.code}" has no API key configured.` };
      // The SDK encodes the id but sends `.` and `..` as they are, for the server to resolve.
      if (referenceSegment(reference) === null) return unsendableReference(vendor);
      const timeoutMs = options.timeoutMs ?? vendor.timeout_ms;
      try {
        return found(await stripe.paymentMethods.retrieve(reference, {}, { timeout: timeoutMs }));
      } catch (error) {
        if (!(error instanceof Stripe.errors.StripeError)) throw error;
        return classify(vendor, error, timeoutMs);
      }
    },
  };
}

function found(method: Stripe.PaymentMethod): VendorInstruction {
  const specific = (method as unknown as Record<string, unknown>)[method.type];
  const kept: Record<string, unknown> = {};
  if (specific && typeof specific === 'object') {
    for (const field of KEPT_FIELDS) {
      const value = (specific as Record<string, unknown>)[field];
      if (value !== undefined && value !== null && typeof value !== 'object') kept[field] = value;
    }
  }
  return {
    outcome: 'found',
    status: isExpired(kept) ? 'expired' : 'active',
    details: { id: method.id, object: 'payment_method', type: method.type, livemode: method.livemode, [method.type]: kept },
  };
}

// A PaymentMethod has no status of its own; a card past its expiry month is the one state worth showing.
function isExpired(card: Record<string, unknown>): boolean {
  if (typeof card.exp_year !== 'number' || typeof card.exp_month !== 'number') return false;
  const now = new Date();
  return card.exp_year * 12 + card.exp_month < now.getUTCFullYear() * 12 + now.getUTCMonth() + 1;
}

function classify(vendor: PaymentVendor, error: InstanceType<typeof Stripe.errors.StripeError>, timeoutMs: number): VendorInstruction {
  const status = error.statusCode;
  if (error instanceof Stripe.errors.StripeConnectionError || status === undefined) {
    return unavailable(`Payment vendor "${vendor.code}" could not be reached or did not answer within ${timeoutMs} ms.`);
  }
  if (status === 404 || error.code === 'resource_missing') {
    return { outcome: 'not_found', detail: `Payment vendor "${vendor.code}" has no payment method with this reference.` };
  }
  if (status === 408 || status === 429 || status >= 500) {
    return unavailable(`Payment vendor "${vendor.code}" answered HTTP ${status}.`);
  }
  return { outcome: 'rejected', detail: `Payment vendor "${vendor.code}" rejected the request (HTTP ${status}${error.code ? `, ${error.code}` : ''}).` };
}
