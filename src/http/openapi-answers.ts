import type { TSchema } from '@sinclair/typebox';
import { STATUS_CODES } from 'node:http';
import { messageFor, statusFor, type ErrorCode } from '../core/errors.ts';
import { ErrorBody } from '../schemas/error-body.ts';

// How a route documents its answers for the OpenAPI document (openapi.ts). `answer` keeps the
// schema Fastify serializes with, and beside it, under a symbol Fastify ignores, what the answer
// means and an example body. `refusal` does the same for an error body, listing its codes.

export const ANSWER = Symbol('openapi answer');

/** A response header: its JSON schema, with its description. */
export type HeaderDoc = Record<string, unknown> & { description: string };

export interface AnswerDoc {
  schema: object;
  description: string;
  example?: unknown;
  headers?: Record<string, HeaderDoc> | undefined;
  /** A refusal's codes: each must have the status it is listed under (checked by `describedAnswer`). */
  codes?: readonly ErrorCode[];
}

/** A response: its schema (what Fastify serializes with), what it means and an example body. */
export function answer<T extends object>(schema: T, description: string, example?: unknown, headers?: Record<string, HeaderDoc>): T {
  return { ...schema, [ANSWER]: { schema, description, example, headers } satisfies AnswerDoc };
}

const documented = <T extends object>(schema: T, doc: AnswerDoc): T => ({ ...schema, [ANSWER]: doc });

/** An error response: the codes it can carry (listed in its description) and a real example body. */
export function refusal(
  codes: readonly ErrorCode[], example: ErrorBody, options: { schema?: TSchema; note?: string; headers?: Record<string, HeaderDoc> } = {},
): TSchema {
  const list = codes.map((code) => `\`${code}\``).join(', ');
  const description = `Refused; \`code\` is ${codes.length > 1 ? `one of ${list}` : list}.${options.note ? ` ${options.note}` : ''}`;
  const schema = options.schema ?? ErrorBody;
  return documented(schema, { schema, description, example, headers: options.headers, codes });
}

/** What a route gave for one status: its `answer`, or a bare schema described by its own description. */
export function describedAnswer(status: string, raw: Record<string | symbol, unknown>): AnswerDoc {
  const doc = raw[ANSWER] as AnswerDoc | undefined;
  const misplaced = doc?.codes?.find((code) => String(statusFor(code)) !== status);
  if (misplaced) throw new Error(`a route lists the code ${misplaced} under ${status}, but its status is ${statusFor(misplaced)} (core/errors.ts)`);
  if (doc) return doc;
  return { schema: raw, description: typeof raw.description === 'string' ? raw.description : STATUS_CODES[Number(status)] ?? status };
}

/** The 400 of every route whose path names a supplier or an account (their one path-parameter schema). */
export function badPathParameter(attr: 'import_supplier_code' | 'external_account_number'): TSchema {
  return refusal(['invalid'], { detail: messageFor('invalid'), code: 'invalid', errors: [
    { detail: 'This value has an invalid format.', code: 'invalid', attr }] },
  { note: 'A path parameter is not a possible supplier code or account number (too long, or with a control character).' });
}

export const RETRY_AFTER: HeaderDoc = { type: 'integer', format: 'int32', minimum: 0, maximum: 3600, description: 'Seconds to wait before retrying.' };
export const LINK_NEXT: HeaderDoc = {
  type: 'string', maxLength: 2000, description: 'With `page_size`, while more remain: `<url of the next page>; rel="next"`.',
};

/** An answer of one code, its example carrying the code's default detail. */
const error = (description: string, code: ErrorCode): AnswerDoc => ({ schema: ErrorBody, description, example: { detail: messageFor(code), code }, codes: [code] });

/** Answers every operation of a kind can give, whatever it does: added to each unless it gives its own. */
export const COMMON_ANSWERS: Record<string, (op: { guarded: boolean; jsonBody: boolean }) => AnswerDoc | null> = {
  401: ({ guarded }) => guarded ? error(
    'No valid token; `code` is one of `not_authenticated` (no Authorization header), `authentication_failed` (not a valid token, '
      + 'or its key was revoked), `token_expired`, or `invalid` (several Authorization headers).',
    'not_authenticated',
  ) : null,
  413: ({ jsonBody }) => jsonBody ? error(
    'Refused; `code` is `payload_too_large`: the body, once decompressed, is larger than the body limit.',
    'payload_too_large',
  ) : null,
  415: ({ jsonBody }) => jsonBody ? error(
    'Refused; `code` is `unsupported_media_type`: the body is not `application/json` in UTF-8, or its Content-Encoding is neither gzip nor identity.',
    'unsupported_media_type',
  ) : null,
  500: () => error(
    'An unexpected failure; `code` is `internal_error`. It is logged with the request id (the `x-request-id` header).',
    'internal_error',
  ),
  503: () => error(
    'The service or its database is unavailable for a moment; `code` is `service_unavailable`. Retry shortly.',
    'service_unavailable',
  ),
};
