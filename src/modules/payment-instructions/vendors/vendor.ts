import type { Selectable } from 'kysely';
import type { PaymentVendorsTable } from '../../../db/schema.ts';
import { VENDOR_REFERENCE_PATTERN } from '../../../core/identifiers.ts';

// The one seam between the service and the payment vendors (D9). Each kind (http, stripe, …)
// implements PaymentVendorClient; the service only ever sees a VendorInstruction.
export type PaymentVendor = Selectable<PaymentVendorsTable>;

export type VendorInstruction =
  /** It exists. `details` are already stripped of anything sensitive (sensitive-details.ts). */
  | { outcome: 'found'; status: string | null; details: Record<string, unknown> }
  /** The vendor says it does not exist: the client's reference is wrong (400, do not retry as is). */
  | { outcome: 'not_found'; detail: string }
  /** The vendor refused the request for good (auth, bad reference format…): 400, do not retry as is. */
  | { outcome: 'rejected'; detail: string }
  /**
   * Could not get an answer (timeout, refused connection, 5xx, a reply that breaks the protocol):
   * 500, the client may retry as it is. `transient` says whether retrying inside the request may help.
   */
  | { outcome: 'unavailable'; detail: string; transient: boolean };

export interface FetchOptions {
  /** This try's own limit (the vendor's timeout_ms, or less when the call's whole limit is near). */
  timeoutMs?: number | undefined;
}

export interface PaymentVendorClient {
  fetchInstruction(reference: string, options?: FetchOptions): Promise<VendorInstruction>;
}

/**
 * Vendor statuses that say an instruction is over: a cancelled mandate, an expired card. Compared
 * without case, `_`, `-` or spaces. Any other status (`active`, `pending`, a vendor's own word) is
 * taken as live: the protocol's status is free text, and only these are known to mean "ended".
 */
const ENDED_STATUSES = new Set(['cancelled', 'canceled', 'expired', 'revoked', 'closed', 'inactive', 'terminated', 'failed', 'deleted', 'ended']);

export function isEndedStatus(status: string | null): boolean {
  return status !== null && ENDED_STATUSES.has(status.toLowerCase().replace(/[\s_-]/g, ''));
}

export const unavailable = (detail: string, transient = true): VendorInstruction => ({ outcome: 'unavailable', detail, transient });

const REFERENCE = new RegExp(VENDOR_REFERENCE_PATTERN, 'u');

/**
 * The reference as exactly one URL path segment, or null when it cannot be one. The request schema
 * already refuses such references; this is the last check before the vendor's secret goes out, so a
 * caller that skipped the schema still cannot make a client ask the vendor for another path.
 */
export function referenceSegment(reference: string): string | null {
  if (!REFERENCE.test(reference)) return null;
  const segment = encodeURIComponent(reference);
  return /^(?:\.|%2e)+$/i.test(segment) ? null : segment;
}

/** The answer for a reference that cannot be sent: the vendor is not asked. */
export const unsendableReference = (vendor: PaymentVendor): VendorInstruction => ({
  outcome: 'rejected', detail: `The reference cannot be sent to payment vendor "${vendor.code}": it must be one URL path segment.`,
});
