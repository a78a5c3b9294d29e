import secureJson from 'secure-json-parse';

// A "__proto__" key, or a "constructor" object holding "prototype": code that copies objects could
// take either for the object's prototype. No field of the service has either name. The JSON bodies
// are refused with them by Fastify's parser (secure-json-parse, body-encoding.ts); a record line of a
// migration job by the same library's scan, with the same words, so a record is refused exactly where
// its endpoint's body would be.

export const forbiddenKeyDetail = (what: 'body' | 'line'): string =>
  `The ${what} holds a key named "__proto__", or a "constructor" object with a "prototype" key; no field of the service has either name, and they are refused before validation.`;

/**
 * Whether a parsed JSON value holds such a key. Only scanned when its text could spell one: either
 * name written out holds "proto", and one with an escaped letter holds "\u".
 */
export function holdsForbiddenKey(text: string, value: unknown): boolean {
  if (value === null || typeof value !== 'object' || (!text.includes('proto') && !text.includes('\\u'))) return false;
  try {
    secureJson.scan(value, { protoAction: 'error', constructorAction: 'error' });
    return false;
  } catch {
    return true;
  }
}
