import { isUtf8 } from 'node:buffer';
import { PassThrough, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { forbiddenKeyDetail } from '../core/forbidden-keys.ts';
import { recordInexactNumbers } from '../core/json-numbers.ts';
import { recordStorableText } from '../core/unstorable-text.ts';

// How a request body's bytes are read, decided once for the app (issue #14): an encoding or a
// charset the service would not really decode is refused (415), not read as plain UTF-8.
//
// - `Content-Encoding`: identity, or gzip on a JSON body (inflated here, and the body limit applies
//   to the inflated bytes, so a small bomb cannot grow past it). The NDJSON upload reads its own
//   stream and encoding (migration-jobs.routes.ts); every other encoding is 415.
// - `charset`: UTF-8 or none, on every body; a JSON body that is not valid UTF-8 is a 400.
// - JSON: Fastify's own parser (prototype poisoning refused), then a pass over the text that finds
//   numbers the parse changed (json-numbers.ts), so validation can refuse them at their field, and
//   one that clears a body of NUL and lone surrogates from its text (unstorable-text.ts), so
//   validation need not walk it for them.
export function registerBodyReading(app: FastifyInstance, bodyLimit: number): void {
  // A callback hook, not an async one: it runs on every request with a body, and most answer at once.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    try {
      done(null, bodyStream(request, payload, bodyLimit));
    } catch (error) {
      done(error as Error);
    }
  });

  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer; // parseAs 'buffer' hands a Buffer
    // Decoding alone would put U+FFFD in place of bytes that are not UTF-8, and store it as sent.
    if (!isUtf8(bytes)) {
      done(new AppError('parse_error', 'The body is not valid UTF-8.'), undefined);
      return;
    }
    const text = bytes.toString('utf8');
    // The default parser answers through the callback; it returns nothing to await.
    void parseJson(request, text, (error: Error | null, value?: unknown) => {
      if (!error) {
        recordInexactNumbers(text, value);
        recordStorableText(text, value);
        // Kept only for a route that answers it: a WeakMap entry per body costs every other route
        // garbage-collector time for nothing.
        if (request.routeOptions.config.echoesBodyText === true && value !== null && typeof value === 'object') textByDocument.set(value, text);
      }
      done(error && parsesPlainly(text) ? new AppError('parse_error', FORBIDDEN_KEY_DETAIL) : error, value);
    });
  });
}

// Fastify's parser refuses a "__proto__" key, or a "constructor" holding "prototype" (code that copies
// objects could take either for the object's prototype), with the same error as malformed text. Such
// a body is valid JSON, so the error path parses it plainly (only to tell, never to use it) and says why.
function parsesPlainly(text: string): boolean {
  try {
    JSON.parse(text.charCodeAt(0) === BYTE_ORDER_MARK ? text.slice(1) : text);
    return true;
  } catch {
    return false;
  }
}
const FORBIDDEN_KEY_DETAIL = forbiddenKeyDetail('body');

const textByDocument = new WeakMap<object, string>();
const BYTE_ORDER_MARK = 0xfeff;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers its body's own text (jsonTextOf): the parser keeps it for the route. */
    echoesBodyText?: boolean;
  }
}

/**
 * The JSON text a parsed body was read from (inflated, if it came gzipped; without a byte order
 * mark), for an answer that echoes the body exactly as sent: re-serialising the parsed body would
 * only cost time and lose the sender's own spelling (white space, escapes, number forms), never its
 * meaning. Only on a route whose config says `echoesBodyText: true`; undefined for anything else
 * (and for anything this parser did not produce).
 */
export function jsonTextOf(document: unknown): string | undefined {
  if (document === null || typeof document !== 'object') return undefined;
  const text = textByDocument.get(document);
  return text !== undefined && text.charCodeAt(0) === BYTE_ORDER_MARK ? text.slice(1) : text;
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;
const JSON_TYPE = /^\s*application\/json\s*(;|$)/i;

/** The stream the body is parsed from: the request's own, or its gzip inflated; throws a 415. */
function bodyStream(request: FastifyRequest, payload: Readable, bodyLimit: number): Readable {
  if (!hasBody(request)) return payload;
  const contentType = String(request.headers['content-type'] ?? '');
  const charset = CHARSET.exec(contentType)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new AppError('unsupported_media_type', `Charset "${charset}" is not supported; send the body in UTF-8.`);
  }
  if (!JSON_TYPE.test(contentType)) return payload;
  const encoding = String(request.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return payload;
  if (encoding === 'gzip' || encoding === 'x-gzip') return inflated(payload, bodyLimit);
  throw new AppError('unsupported_media_type', `Content-Encoding "${encoding}" is not supported; use gzip or none.`);
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The body gunzipped, stopped with a 413 as soon as the inflated bytes pass the limit. Fastify
 * compares Content-Length with `receivedEncodedLength`, so the stream counts the compressed bytes.
 * Not `pipeline`: on a failure it would destroy the request, and with it the socket the answer needs.
 */
function inflated(raw: Readable, limit: number): Readable {
  const out = Object.assign(new PassThrough(), { receivedEncodedLength: 0 });
  const gunzip = createGunzip();
  let inflatedBytes = 0;
  const stop = (error: AppError) => {
    raw.unpipe(gunzip);
    gunzip.destroy();
    out.destroy(error);
  };
  raw.on('data', (chunk: Buffer) => { out.receivedEncodedLength += chunk.length; });
  raw.on('error', (error) => out.destroy(error));
  gunzip.on('error', () => stop(new AppError('parse_error', 'The body is not valid gzip.')));
  gunzip.on('data', (chunk: Buffer) => {
    inflatedBytes += chunk.length;
    // At most `limit` bytes wait in `out`: no back-pressure needed.
    if (inflatedBytes > limit) stop(new AppError('payload_too_large'));
    else out.write(chunk);
  });
  gunzip.on('end', () => out.end());
  raw.pipe(gunzip);
  return out;
}
