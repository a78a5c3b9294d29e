import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Caller } from '../core/caller.ts';
import { AppError } from '../core/errors.ts';
import type { TokenService } from '../modules/auth/index.ts';

declare module 'fastify' {
  interface FastifyRequest { caller?: Caller }
}

/**
 * The REST guard: `Authorization: Token <token>` (spec 5, D3). Runs before the body is parsed. The scheme
 * name is case-insensitive (RFC 9110 11.1), so `token …` works too.
 */
export function authGuard(tokens: TokenService): onRequestAsyncHookHandler {
  return async (request) => authenticate(tokens, request);
}

export async function authenticate(tokens: TokenService, request: FastifyRequest): Promise<void> {
  // Node keeps the first of several Authorization headers and drops the rest: which credential a
  // proxy or the client meant is then a guess, so more than one is refused outright.
  if (authorizationHeaderCount(request.raw.rawHeaders) > 1) {
    throw new AppError('invalid', 'Send exactly one Authorization header.');
  }
  const header = request.headers.authorization;
  if (!header) throw new AppError('not_authenticated');
  const match = /^Token\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new AppError('authentication_failed', 'Use the header form "Authorization: Token <token>".');
  request.caller = await tokens.authenticate(match[1]!);
}

/**
 * Whether a path lies under the guarded `/v1` prefix, read as the router would (percent-decoded), so
 * an unknown `/v1/...` path answers 401 without a valid token and the route map cannot be probed.
 */
export function isGuardedPath(path: string): boolean {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // Malformed escapes: judged as sent.
  }
  return decoded === '/v1' || decoded.startsWith('/v1/');
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new Error('route is not behind the auth guard');
  return request.caller;
}

/** How many Authorization headers the request carried (Node keeps only the first in `headers`). */
export function authorizationHeaderCount(rawHeaders: string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.length === 13 && rawHeaders[i]!.toLowerCase() === 'authorization') count += 1;
  }
  return count;
}
