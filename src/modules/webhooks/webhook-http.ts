import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { blockedReason, guardedLookup, RefusedAddressError, refusal } from './ssrf-guard.ts';

// One HTTP attempt of a webhook delivery: POST the signed body, report the status or why there was
// none. Redirects are never followed (a 3xx is just a status, so a failed attempt): following one
// would let a public endpoint bounce the delivery onto an internal address.

export const DELIVERY_TIMEOUT_MS = 10_000;

// Connections are kept alive between deliveries to the same host (a TCP and TLS handshake per event
// cost more than the delivery itself under load). Each socket was opened through the address check
// below, so reusing it reaches an address already allowed; guarded and unguarded requests never
// share a socket. An idle socket is closed after 4 s, before a receiver's usual 5 s keep-alive ends.
// The pools belong to the delivery workers that made them (startWebhookWorkers), which close them
// when they stop: no pool outlives its workers, none is shared through the module.
//
// A pool has a socket for every attempt its workers make at once, whatever the host: an attempt that
// waited in the pool for a socket would spend its 10 s there, and be logged as the receiver's
// failure without having been sent. With fewer sockets, one organisation's slow receiver held them
// all, and another organisation's deliveries to the same host (a shared relay) timed out unsent.
/** The most attempts the delivery workers of one process make at once (two batches of fifty). */
export const PARALLEL_ATTEMPTS = 100;
const agentOptions = { keepAlive: true, maxSockets: PARALLEL_ATTEMPTS, maxFreeSockets: 32, timeout: 4000 };

type AgentPair = { http: HttpAgent; https: HttpsAgent };
export interface DeliveryAgents {
  guarded: AgentPair;
  open: AgentPair;
  /** Closes every socket of both pools (the workers stopped). */
  destroy(): void;
}

export function createDeliveryAgents(): DeliveryAgents {
  const pair = (): AgentPair => ({ http: new HttpAgent(agentOptions), https: new HttpsAgent(agentOptions) });
  const agents = { guarded: pair(), open: pair() };
  return {
    ...agents,
    destroy() {
      for (const { http, https } of [agents.guarded, agents.open]) {
        http.destroy();
        https.destroy();
      }
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

export function postWebhook(url: string, body: string, headers: Record<string, string>, options: PostOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ status: null, latencyMs: 0, error: `invalid URL "${url}"` });
  }
  // An IP literal never goes through `lookup`, so it is checked here; names are checked on the
  // address they resolve to, at connection time (guardedLookup).
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!options.allowPrivateNetworks && isIP(host)) {
    const reason = blockedReason(host);
    if (reason) return Promise.resolve({ status: null, latencyMs: 0, error: refusal(host, host, reason).message, refused: true });
  }
  const https = target.protocol === 'https:';
  const send = https ? httpsRequest : httpRequest;
  const pool = options.allowPrivateNetworks ? options.agents.open : options.agents.guarded;
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const req = send(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      agent: https ? pool.https : pool.http,
      ...(options.allowPrivateNetworks ? {} : { lookup: guardedLookup as never }),
    }, (res) => {
      finish({ status: res.statusCode ?? 0, latencyMs: elapsed(), error: null });
      // The answer's body is not used; drain it so the socket closes, within the same deadline.
      res.on('error', () => {});
      res.on('end', () => clearTimeout(deadline));
      res.resume();
    });
    const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (error) => {
      clearTimeout(deadline);
      finish({ status: null, latencyMs: elapsed(), error: error.message || String(error), refused: error instanceof RefusedAddressError });
    });
    req.end(body);
  });
}
