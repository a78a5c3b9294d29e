import createClient, { type Client } from 'openapi-fetch';
import { fetch, Request, type Response } from 'undici';
import type { components, paths } from '../../client/api-types.ts';

// The HTTP side of import-migrate: one typed client (openapi-fetch over the generated types) whose
// fetch adds the token, refreshes it, and retries what is worth retrying. The client never imports
// the service's code: the generated types are the whole contract.
// Its fetch and Request are the undici package's, not node 20's built-in ones: the built-in fetch
// never settles when a server accepts the connection and closes it at once, and the process then
// ends with nothing said (exit 13) instead of "cannot reach the service" (exit 2).
// The document's components are named after the service's schemas (`$id`), so they are stable names.
export type Job = components['schemas']['MigrationJob'];
export type RecordResult = components['schemas']['MigrationJobRecordResult'];
export type ApiClient = Client<paths>;

/** The service answered with a refusal (a 4xx): exit status 1; or is still unavailable after the retries (isUnavailable): exit status 2. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(readonly status: number, readonly code: string, detail: string) {
    super(`${detail} (${code}, HTTP ${status})`);
  }
}

/** The service could not be reached at all, even after the retries, or what answered is not the service: exit status 2. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

export interface RetryPolicy { attempts: number; baseDelayMs: number }

interface TokenPair { token: string; expiresIn: number; refreshToken: string; refreshExpiresIn: number }

/**
 * Busy, restarting or failing, not refusing: 429 and 503 by the spec; 408 when a starved server timed
 * the request out; 502/504 from a proxy in front of it; 500 and the other 5xx, the service (or that
 * proxy) failed, not the request. Every call retries these, then exits 2 (the one classification).
 */
export const isUnavailable = (status: number): boolean => status >= 500 || status === 408 || status === 429;
const TOKEN_FIELDS = 'token expiresIn refreshToken refreshExpiresIn';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class ApiSession {
  readonly client: ApiClient;
  private pair: TokenPair | null = null;
  private tokenExpiresAt = 0;
  private refreshExpiresAt = 0;

  constructor(readonly baseUrl: string, private readonly apiKey: string, readonly retry: RetryPolicy) {
    this.client = createClient<paths>({
      baseUrl,
      // The same classes at run time; the DOM types and undici's own differ only on paper.
      Request: Request as unknown as typeof globalThis.Request,
      fetch: (request) => this.send(request as unknown as Request, true) as unknown as Promise<globalThis.Response>,
    });
  }

  /** The fetch of requests whose body cannot be sent twice (the streamed upload): no retry here. */
  readonly sendOnce = (request: Request): Promise<Response> => this.send(request, false);

  private renewing: Promise<string> | null = null;

  /**
   * A valid token, obtained or refreshed a minute (or a fifth of its life) before it expires. One
   * renewal at a time, shared by every caller: refresh tokens rotate on use, and the service revokes
   * the whole family when one is presented twice.
   */
  token(): Promise<string> {
    if (this.pair && Date.now() < this.tokenExpiresAt) return Promise.resolve(this.pair.token);
    this.renewing ??= this.renew().finally(() => { this.renewing = null; });
    return this.renewing;
  }

  private async renew(): Promise<string> {
    const now = Date.now();
    const useRefresh = this.pair !== null && now < this.refreshExpiresAt;
    const pair = await this.obtain(useRefresh ? { refreshToken: this.pair!.refreshToken } : { APIKey: this.apiKey })
      .catch((error: unknown) => {
        // A refresh token can be refused (revoked key, restarted signing key): the API key decides.
        if (useRefresh && error instanceof ApiError) return this.obtain({ APIKey: this.apiKey });
        throw error;
      });
    const margin = (seconds: number) => Math.min(60, seconds / 5) * 1000;
    this.pair = pair;
    this.tokenExpiresAt = Date.now() + pair.expiresIn * 1000 - margin(pair.expiresIn);
    this.refreshExpiresAt = Date.now() + pair.refreshExpiresIn * 1000 - margin(pair.refreshExpiresIn);
    return pair.token;
  }

  /** Forget the token (the service said it expired): the next request obtains a fresh one. */
  expireToken(): void {
    this.tokenExpiresAt = 0;
  }

  private async obtain(input: { APIKey: string } | { refreshToken: string }): Promise<TokenPair> {
    const [key, value] = Object.entries(input)[0]!;
    const query = `mutation ObtainToken($value: String!) { obtainToken(input: {${key}: $value}) { ${TOKEN_FIELDS} } }`;
    const request = new Request(new URL('/graphql', this.baseUrl), {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables: { value } }),
    });
    const response = await this.withRetries(request, true, false);
    const text = await response.text().catch(() => '');
    const body = jsonOf(text) as
      { data?: { obtainToken?: TokenPair | null }; errors?: Array<{ message: string; extensions?: { code?: string } }> } | null;
    // Unavailable first: a proxy's error page is not JSON either, and the URL may well be right.
    if (isUnavailable(response.status)) throw errorOf(response, body ?? text, 'cannot obtain a token: ');
    const pair = body?.data?.obtainToken;
    if (pair) return pair;
    const first = body?.errors?.[0];
    if (first) throw new ApiError(response.status, first.extensions?.code ?? 'authentication_failed', `cannot obtain a token: ${first.message}`);
    if (body && !response.ok) throw errorOf(response, body, 'cannot obtain a token: ');
    // Something answers at --url, and it is not the service (a web page, another API): no API key can help.
    const type = response.headers.get('content-type')?.split(';')[0]?.trim() || 'no content type';
    throw new UnreachableError(`${request.url} answered HTTP ${response.status} with ${type}, not the service's JSON: is --url right?`);
  }

  private send(request: Request, replayable: boolean): Promise<Response> {
    return this.withRetries(request, replayable, true);
  }

  /**
   * Retries network errors and isUnavailable statuses with exponential backoff (honouring Retry-After), and a 401
   * token_expired once with a fresh token. A body that cannot be replayed is sent exactly once.
   */
  private async withRetries(request: Request, replayable: boolean, authorise: boolean): Promise<Response> {
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      const attemptRequest = replayable ? request.clone() : request;
      if (authorise) attemptRequest.headers.set('authorization', `Token ${await this.token()}`);
      const last = !replayable || attempt >= this.retry.attempts;
      let response: Response;
      try {
        response = await fetch(attemptRequest);
      } catch (error) {
        if (request.signal.aborted) throw error;
        if (last) throw new UnreachableError(`cannot reach the service at ${this.baseUrl}: ${causeOf(error)}`);
        await sleep(this.delay(attempt));
        continue;
      }
      if (authorise && response.status === 401 && replayable && !refreshed && await codeOf(response.clone()) === 'token_expired') {
        refreshed = true;
        this.expireToken();
        continue;
      }
      if (isUnavailable(response.status) && !last) {
        await response.body?.cancel();
        await sleep(this.delay(attempt, response.headers.get('retry-after')));
        continue;
      }
      return response;
    }
  }

  private delay(attempt: number, retryAfter?: string | null): number {
    const seconds = Number(retryAfter);
    if (retryAfter && Number.isFinite(seconds)) return Math.min(seconds * 1000, 30_000);
    return this.retry.baseDelayMs * 2 ** (attempt - 1) * (0.75 + Math.random() / 2);
  }
}

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function codeOf(response: Response): Promise<string | undefined> {
  const body = await response.json().catch(() => null) as { code?: string } | null;
  return body?.code;
}

function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** The answer's data, or an ApiError with the service's own reason (D4 error body). */
export function dataOf<T>(result: { data?: T; error?: unknown; response: globalThis.Response }): T {
  if (result.error === undefined && result.response.ok) return result.data as T;
  throw errorOf(result.response, result.error);
}

/** A failed answer as an ApiError: the service's code and detail from its error body, else the HTTP status text. */
function errorOf(response: { status: number; statusText: string }, error: unknown, prefix = ''): ApiError {
  const body = (typeof error === 'object' && error !== null ? error : {}) as { code?: string; detail?: string; errors?: Array<{ attr?: string; detail?: string }> };
  const first = body.errors?.[0];
  const where = first?.attr && first.attr !== 'non_field_errors' && first.detail !== body.detail ? `: ${first.attr}: ${first.detail}` : '';
  const detail = body.detail ?? response.statusText;
  return new ApiError(response.status, body.code ?? 'error', `${prefix}${where ? `${detail.replace(/\.$/, '')}${where}` : detail}`);
}
