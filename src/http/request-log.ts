import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

// One log line per request, written once the answer has gone out, in place of Fastify's pair of
// lines ("incoming request", "request completed"): what was asked (method, url, route pattern), how
// it ended (status, time, the error code of a failure) and what it was about (the import supplier,
// the external account number, the migration job) where the path, query or body names them. Never
// the payload itself. As Fastify's LogController, it also covers answers given before any route or
// hook runs (a malformed URL).

const errorCodes = new WeakMap<FastifyRequest, string>();

/** The error code a request ended with (the error handler and POST /graphql note it). */
export function noteErrorCode(request: FastifyRequest, code: string): void {
  errorCodes.set(request, code);
}

// Values from the client are logged as sent but cut short: a 3,000-character path parameter is
// refused, and its log line must not be 3,000 characters too.
const MAX_VALUE = 200;
const MAX_URL = 500;

export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    logRequestCompleted(request, reply, error);
  }
}

/**
 * The line itself; also written by the router's error handler, whose answers skip the lifecycle.
 * It runs for every request: fields are set one by one (in the order the line shows them), with no
 * closure, spread or rest array made per request.
 */
export function logRequestCompleted(request: FastifyRequest, reply: FastifyReply, error?: Error | null): void {
  const line: Record<string, unknown> = {
    method: request.method,
    url: clip(request.url, MAX_URL),
    route: request.routeOptions.url ?? null,
    status: reply.statusCode,
  };
  const elapsed = reply.elapsedTime;
  if (Number.isFinite(elapsed)) line.ms = Math.round(elapsed * 10) / 10;
  const code = errorCodes.get(request);
  if (code !== undefined) line.code = code;
  addSubject(line, request);
  // An error here is the response stream failing (the client went away mid-answer).
  if (error) request.log.warn({ ...line, err: error }, 'request completed with a broken response');
  else request.log.info(line, 'request completed');
}

/** Supplier, account and job as the request names them: path parameters first, then query and body. */
function addSubject(line: Record<string, unknown>, request: FastifyRequest): void {
  const params = objectOf(request.params);
  const query = objectOf(request.query);
  const body = objectOf(request.body);
  const supplier = firstText(params?.import_supplier_code, query?.import_supplier, body?.import_supplier, body?.import_supplier_code);
  if (supplier !== undefined) line.import_supplier = clip(supplier, MAX_VALUE);
  const account = firstText(params?.external_account_number, body?.external_account_number);
  if (account !== undefined) line.external_account_number = clip(account, MAX_VALUE);
  const job = firstText(params?.job_id);
  if (job !== undefined) line.job_id = clip(job, MAX_VALUE);
}

/** The first of the values that is a non-empty string. */
function firstText(a: unknown, b?: unknown, c?: unknown, d?: unknown): string | undefined {
  if (typeof a === 'string' && a !== '') return a;
  if (typeof b === 'string' && b !== '') return b;
  if (typeof c === 'string' && c !== '') return c;
  if (typeof d === 'string' && d !== '') return d;
  return undefined;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function clip(value: string, max: number): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}
