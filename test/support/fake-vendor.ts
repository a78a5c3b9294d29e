import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

// A local payment vendor for tests, on 127.0.0.1 and a free port. It speaks both protocols:
// the D9 `http` kind (GET /payment-instructions/:reference) and the Stripe API's
// GET /v1/payment_methods/:id. What it answers is set per reference; unknown references are 404.
// Every request is recorded, on a route or not, with its path exactly as sent (before any `..` is
// resolved) and its Authorization header, so a test can prove where a vendor's secret went.
export type Behaviour =
  | 'found' // 200 with the instruction, including sensitive fields the service must drop
  | 'not_found' // 404
  | 'forbidden' // 403
  | 'error' // 500
  | 'hang' // never answers (the client's timeout fires)
  | 'flaky' // 500 twice, then as 'found'
  | 'slow' // as 'found', after SLOW_MS
  | 'cancelled' // 200 with the instruction, its status CANCELLED (for stripe, a card that expired in 2020)
  | 'malformed'; // 200 with a body that breaks the protocol

/** How long a 'slow' reference takes to be answered. */
export const SLOW_MS = 1500;

export interface FakeRequest {
  /** The request target as sent, query included. */
  path: string;
  /** The decoded reference, or null for a request on no route of the protocols. */
  reference: string | null;
  authorization: string | undefined;
}

export interface FakeVendor {
  url: string;
  set(reference: string, behaviour: Behaviour): void;
  /** Requests received, in order. */
  requests: FakeRequest[];
  hits(reference: string): number;
}

export async function startFakeVendor(): Promise<FakeVendor> {
  const behaviours = new Map<string, Behaviour>();
  const requests: FakeRequest[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const http = /^\/payment-instructions\/([^/]+)$/.exec(url.pathname);
    const stripe = /^\/v1\/payment_methods\/([^/]+)$/.exec(url.pathname);
    const match = http ?? stripe;
    const routed = req.method === 'GET' && match !== null;
    const reference = routed ? decodeURIComponent(match[1]!) : null;
    requests.push({ path: req.url ?? '', reference, authorization: req.headers.authorization });
    if (reference === null) return send(res, 404, { error: 'no such route' });
    let behaviour = behaviours.get(reference) ?? 'not_found';
    if (behaviour === 'flaky') behaviour = requests.filter((r) => r.reference === reference).length <= 2 ? 'error' : 'found';
    answer(res, req, behaviour, reference, stripe !== null);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (reference, behaviour) => void behaviours.set(reference, behaviour),
    requests,
    hits: (reference) => requests.filter((r) => r.reference === reference).length,
  };
}

/** A URL where nothing listens: connections are refused. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

function answer(res: ServerResponse, _req: IncomingMessage, behaviour: Behaviour, reference: string, stripe: boolean): void {
  switch (behaviour) {
    case 'hang':
      return;
    case 'slow':
      return void setTimeout(() => answer(res, _req, 'found', reference, stripe), SLOW_MS);
    case 'found':
      return send(res, 200, stripe ? stripePaymentMethod(reference) : httpInstruction(reference));
    case 'cancelled':
      return send(res, 200, stripe
        ? { ...stripePaymentMethod(reference), card: { ...stripePaymentMethod(reference).card, exp_year: 2020 } }
        : { ...httpInstruction(reference), status: 'CANCELLED' });
    case 'malformed':
      return send(res, 200, { hello: 'world' });
    case 'not_found':
      return send(res, 404, stripe
        ? { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such PaymentMethod: '${reference}'` } }
        : { detail: 'not found' });
    case 'forbidden':
      return send(res, 403, stripe ? { error: { type: 'invalid_request_error', message: 'forbidden' } } : { detail: 'forbidden' });
    case 'error':
    case 'flaky':
      return send(res, 500, stripe ? { error: { type: 'api_error', message: 'boom' } } : { detail: 'boom' });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** A D9 answer that carries what a careless vendor might: the service must store none of the secrets. */
export function httpInstruction(reference: string) {
  return {
    reference, type: 'CARD', status: 'active', brand: 'visa', last4: '4242', expiry: '12/30',
    card_number: '4242424242424242', cvc: '123', pan: '4242424242424242',
    holder: { name: 'Ada Lovelace', iban: 'GB33BUKB20201555555555', accountNumber: '55555555' },
    label: '4242 4242 4242 4242',
  };
}

export function stripePaymentMethod(id: string) {
  return {
    id, object: 'payment_method', type: 'card', livemode: false, created: 1_700_000_000, customer: null,
    billing_details: { name: 'Ada Lovelace', email: null, phone: null, address: null },
    card: {
      brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2099, funding: 'credit', country: 'GB',
      fingerprint: 'abc123', number: '4242424242424242', checks: { cvc_check: 'pass' },
    },
  };
}
