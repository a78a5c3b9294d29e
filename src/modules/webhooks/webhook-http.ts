import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { blockedReason, guardedLookup, RefusedAddressError, refusal } from './ssrf-guard.ts';

// One HTTP attempt of a webhook delivery: POST the signed body, report the status or why there was
// none. Redirects are never followed (a 3xx is just a status, so a failed attempt): following one
// would let a public endpoint bounce the delivery onto an internal address. The client is undici's
// (the engine of Node's own fetch), which costs about half the CPU a request of node:http's.

/** The time a new connection has to open, and then the time the answer's headers have to come. */
export const DELIVERY_TIMEOUT_MS = 10_000;

// Connections are kept alive between deliveries to the same origin (a TCP and TLS handshake per
// event cost more than the delivery itself under load). Each socket was opened through the address
// check below, so reusing it reaches an address already allowed; guarded and unguarded requests never
// share a socket. An idle socket is closed after 4 s, before a receiver's usual 5 s keep-alive ends.
// The pools belong to the delivery workers that made them (startWebhookWorkers), which close them
// when they stop: no pool outlives its workers, none is shared through the module.
const poolOptions = { connections: 32, keepAliveTimeout: 4000, keepAliveMaxTimeout: 4000 };

export interface DeliveryAgents {
  /** Connects only to addresses that pass the check (names are checked on what they resolve to). */
  guarded: Agent;
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: any address. */
  open: Agent;
  /** Closes every socket of both pools (the workers stopped). */
  destroy(): void;
}

export function createDeliveryAgents(): DeliveryAgents {
  const guarded = new Agent({ ...poolOptions, connect: { timeout: DELIVERY_TIMEOUT_MS, lookup: guardedLookup as never } });
  const open = new Agent({ ...poolOptions, connect: { timeout: DELIVERY_TIMEOUT_MS } });
  return {
    guarded,
    open,
    destroy() {
      for (const agent of [guarded, open]) agent.destroy().catch(() => {});
    },
  };
}

/** `refused`: nothing was sent, the address is not one the service may deliver to (ssrf-guard.ts). */
export type AttemptResult =
  | { status: number; latencyMs: number; error: null; refused?: false }
  | { status: null; latencyMs: number; error: string; refused?: boolean };

export interface PostOptions {
  allowPrivateNetworks: boolean;
  agents: DeliveryAgents;
  timeoutMs?: number;
}

export async function postWebhook(url: string, body: string, headers: Record<string, string>, options: PostOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { status: null, latencyMs: 0, error: `invalid URL "${url}"` };
  }
  // An IP literal never goes through `lookup`, so it is checked here; names are checked on the
  // address they resolve to, at connection time (guardedLookup).
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!options.allowPrivateNetworks && isIP(host)) {
    const reason = blockedReason(host);
    if (reason) return { status: null, latencyMs: 0, error: refusal(host, host, reason).message, refused: true };
  }
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  try {
    const res = await request(target, {
      method: 'POST', headers, body,
      dispatcher: options.allowPrivateNetworks ? options.agents.open : options.agents.guarded,
      headersTimeout: timeoutMs, bodyTimeout: timeoutMs,
    });
    const latencyMs = elapsed();
    // The answer's body is not used; reading it to its end frees the connection for the next one.
    res.body.dump().catch(() => {});
    return { status: res.statusCode, latencyMs, error: null };
  } catch (error) {
    return { status: null, latencyMs: elapsed(), error: failureOf(error, timeoutMs), refused: error instanceof RefusedAddressError };
  }
}

const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Why an attempt got no answer, as the delivery log shows it. */
function failureOf(error: unknown, timeoutMs: number): string {
  if (TIMEOUTS.has((error as { code?: string }).code ?? '')) return `no answer within ${timeoutMs} ms`;
  return (error instanceof Error && error.message) || String(error);
}
