import { stripSensitive } from './sensitive-details.ts';
import {
  referenceSegment, unavailable, unsendableReference, type FetchOptions, type PaymentVendor, type PaymentVendorClient, type VendorInstruction,
} from './vendor.ts';

// Kind `http` (D9): GET {url}/payment-instructions/{reference}, `Authorization: Bearer {secret}` when a
// secret is set. 200 + JSON object with reference, type and status: found. 404: not found. Other 4xx:
// rejected, except 408 and 429, which say "later" and so count as unavailable. 5xx, timeouts and
// network failures: unavailable (retried by retry.ts).
const MAX_BODY_BYTES = 64 * 1024;

export function createHttpVendorClient(vendor: PaymentVendor): PaymentVendorClient {
  return {
    async fetchInstruction(reference: string, options: FetchOptions = {}): Promise<VendorInstruction> {
      const timeoutMs = options.timeoutMs ?? vendor.timeout_ms;
      const url = instructionUrl(vendor, reference);
      if (!url) return unsendableReference(vendor);
      const headers: Record<string, string> = { accept: 'application/json' };
      if (vendor.secret) headers.authorization = `Bearer ${vendor.secret}`;
      const signal = AbortSignal.timeout(timeoutMs);
      let response: Response;
      let text: string;
      try {
        // Redirects are not part of the protocol; following one could send the secret elsewhere.
        response = await fetch(url, { headers, signal, redirect: 'manual' });
        if (response.status !== 200) {
          await response.body?.cancel();
          return classifyStatus(vendor, response.status);
        }
        text = await readCapped(response);
      } catch (error) {
        if (error instanceof ResponseTooLarge) {
          return unavailable(`Payment vendor "${vendor.code}" answered with more than ${MAX_BODY_BYTES} bytes.`, false);
        }
        return unavailable(`Payment vendor "${vendor.code}" ${describeFailure(error, timeoutMs)}.`);
      }
      return parseFound(vendor, text);
    },
  };
}

/**
 * The instruction's URL, or null unless the reference stays the last path segment once the URL is
 * parsed (fetch resolves `.` and `..` segments, so `..` would have asked the vendor's root).
 */
function instructionUrl(vendor: PaymentVendor, reference: string): URL | null {
  const segment = referenceSegment(reference);
  if (segment === null) return null;
  const url = new URL(`${vendor.url}/payment-instructions/${segment}`);
  return url.pathname.endsWith(`/payment-instructions/${segment}`) && !url.search && !url.hash ? url : null;
}

function classifyStatus(vendor: PaymentVendor, status: number): VendorInstruction {
  if (status === 404) {
    return { outcome: 'not_found', detail: `Payment vendor "${vendor.code}" has no payment instruction with this reference.` };
  }
  if (status === 408 || status === 429 || status >= 500) {
    return unavailable(`Payment vendor "${vendor.code}" answered HTTP ${status}.`);
  }
  if (status >= 400) {
    return { outcome: 'rejected', detail: `Payment vendor "${vendor.code}" rejected the request (HTTP ${status}).` };
  }
  return unavailable(`Payment vendor "${vendor.code}" answered HTTP ${status}, which its protocol does not allow.`, false);
}

function parseFound(vendor: PaymentVendor, text: string): VendorInstruction {
  let body: unknown;
  try { body = JSON.parse(text); } catch { body = undefined; }
  const object = body as Record<string, unknown> | undefined;
  if (!object || typeof object !== 'object' || Array.isArray(object)
    || typeof object.reference !== 'string' || typeof object.type !== 'string' || typeof object.status !== 'string') {
    // A vendor bug, not the client's: 500 so the request can be retried once the vendor is fixed.
    return unavailable(`Payment vendor "${vendor.code}" answered 200 without a JSON object holding reference, type and status.`, false);
  }
  return { outcome: 'found', status: object.status.slice(0, 100), details: stripSensitive(object) };
}

class ResponseTooLarge extends Error {}

async function readCapped(response: Response): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) {
    await response.body?.cancel();
    throw new ResponseTooLarge();
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw new ResponseTooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeFailure(error: unknown, timeoutMs: number): string {
  const e = error as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `did not answer within ${timeoutMs} ms`;
  const cause = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? 'unknown error';
  return `could not be reached (${cause})`;
}
