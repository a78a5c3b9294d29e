import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { AppError, messageFor } from '../core/errors.ts';
import { isUnstorableInput, retryableStoreFailure, STORE_FAILURES } from '../db/errors.ts';
import { isExemptFromRequestDeadline } from './request-deadline.ts';
import { logRequestCompleted, noteErrorCode } from './request-log.ts';

/**
 * The router's limit on one path parameter. Far above any parameter's own `maxLength` (at most 100),
 * and above the 16 KiB header block that bounds the request line anyway: the routes' schemas, not
 * the router, judge a path parameter, so an over-long one is `400 invalid` at its attr after
 * authentication, as the OpenAPI document says, and not a refusal the document does not list.
 */
export const ROUTER_MAX_PARAM_LENGTH = 64 * 1024;

// The one mapper: every failure (an AppError, a framework error, a driver error, the unexpected)
// becomes an AppError here, and every error body is written from one. The REST routes, the 404/405
// handler and /readyz answer through the handler below; POST /graphql maps with toAppError and only
// wraps the result in the GraphQL shape. No input reaches the client as a 5xx with a stack trace.
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    const appError = toAppError(error);
    logFailure(request, error, appError);
    void reply.code(appError.status).headers(appError.headers ?? {}).send(appError.body());
  });
}

// --- logging a failure (docs/operations.md#logs) ---
/**
 * Notes the code for the request's log line, and logs what an operator must look at. An AppError is
 * an answer the service chose: a vendor down or timing out, the create limit reached. Those are
 * warnings with the code and detail, no stack; client mistakes only show on the request's line.
 * Anything else that ends in a 5xx, and a deliberate internal_error, is an error with its stack.
 */
export function logFailure(request: FastifyRequest, error: unknown, appError: AppError): void {
  noteErrorCode(request, appError.code);
  const expected = error instanceof AppError && appError.code !== 'internal_error';
  if (expected && (appError.status >= 500 || appError.status === 429)) {
    request.log.warn({ code: appError.code, detail: appError.detail }, 'request refused: an upstream service or limit');
  } else if (!expected && appError.status >= 500) {
    request.log.error({ err: error }, 'request failed');
  }
}

/**
 * Errors Fastify raises while routing, before any hook or handler (a malformed percent-escape, a
 * path parameter over the length limit): its `frameworkErrors` option hands them here, and they are
 * answered in the same body as everything else.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const appError = toAppError(error);
  logFailure(request, error, appError);
  reply.raw.once('finish', () => logRequestCompleted(request, reply));
  void reply.code(appError.status).headers(appError.headers ?? {}).send(appError.body());
}
// --- end of logging a failure ---

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const framework = error as Partial<FastifyError>;
  switch (framework.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('parse_error', 'The Content-Length header does not match the body.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('parse_error', 'The body is empty; send a JSON document.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('parse_error');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // Out of reach while the router's limit is above the header block's (ROUTER_MAX_PARAM_LENGTH).
      return new AppError('invalid', 'A path segment is too long.');
    case 'FST_ERR_BAD_URL':
      return new AppError('bad_url');
    default:
      break;
  }
  if (error instanceof SyntaxError || (framework.statusCode === 400 && /JSON|prototype|constructor/i.test(framework.name ?? ''))) {
    return new AppError('parse_error');
  }
  if (framework.statusCode === 400 && framework.validation) {
    return new AppError('invalid', messageFor('invalid'), { errors: [] });
  }
  // Backstop for text the validator let through that the store still cannot take: NUL or bad
  // encoding in a path parameter, nesting deeper than jsonb allows. A client error, not ours.
  if (isUnstorableInput(error)) {
    return new AppError('invalid', 'The request holds text or nesting the store cannot keep.');
  }
  if (framework.statusCode === 503) return new AppError('service_unavailable', 'The service is unavailable; retry shortly.');
  // The store was away, or rolled the request back whole because it conflicted with other work (a
  // deadlock, a serialization failure): nothing was written, and the same request may be sent again.
  const retryable = retryableStoreFailure(error);
  if (retryable) {
    const { detail, retryAfterSeconds } = STORE_FAILURES[retryable];
    return new AppError('service_unavailable', detail, { headers: { 'Retry-After': String(retryAfterSeconds) } });
  }
  return new AppError('internal_error');
}

/**
 * Errors below HTTP (a malformed request line, headers too large, a request that timed out): no
 * route or reply exists yet, so the JSON body of D4 is written to the socket directly.
 */
export function handleClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  // A records upload past REQUEST_TIMEOUT_MS goes on: its own idle limit guards it (request-deadline.ts).
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && isExemptFromRequestDeadline(socket)) return;
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const appError = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? new AppError('request_timeout')
    : error.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('request_header_fields_too_large')
      : new AppError('parse_error', 'The request is not valid HTTP.');
  endWithError(socket, appError);
}

/**
 * Node answers a request whose `Expect` is not `100-continue` itself, with an empty 417, unless the
 * server listens for `checkExpectation`: answered here in the error body, and the connection closed
 * (the body, if any, is not read).
 */
export function answerUnmetExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const appError = new AppError('expectation_failed');
  const body = JSON.stringify(appError.body());
  response.writeHead(appError.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  response.end(body);
}

/**
 * A CONNECT request (a proxy tunnel) never reaches Fastify: with no listener Node closes the socket
 * without a word. The service is no proxy: 405 in the error body, and the connection closed.
 */
export function refuseTunnel(_request: IncomingMessage, socket: Duplex): void {
  socket.on('error', () => {});
  endWithError(socket, new AppError('method_not_allowed', 'Method "CONNECT" not allowed: the service is not a proxy.'));
}

/** Writes the error answer on a socket no Fastify reply exists for, and closes it. */
function endWithError(socket: Duplex, appError: AppError): void {
  const body = JSON.stringify(appError.body());
  socket.end(`HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}
