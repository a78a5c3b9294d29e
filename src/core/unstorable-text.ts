import type { FieldError } from './errors.ts';

/**
 * PostgreSQL cannot store a NUL character in text or jsonb, nor an unpaired UTF-16 surrogate in
 * jsonb. JSON can carry both, so every string and key of a body (free-form values included) is
 * checked here, once, instead of failing at the store. The walk is iterative: bodies nest freely.
 *
 * A body parsed from JSON text is usually cleared from its text alone (recordStorableText): JSON
 * cannot carry a raw NUL (control characters must be escaped), so a NUL or a surrogate in the
 * document needs a `\u0000` or `\uD800`-`\uDFFF` escape in the text, or a raw surrogate there. Text
 * with none of them (most bodies) needs no walk at all; text with one is walked as any other value.
 */
const NONE: readonly FieldError[] = Object.freeze([]);

// An escape of NUL or of a surrogate, or a raw surrogate (paired ones too: a false alarm only costs the walk).
const MAYBE_UNSTORABLE = /\\u(?:0000|[dD][89a-fA-F])|[\ud800-\udfff]/;

const clearedDocuments = new WeakSet<object>();

/** Notes that `document`, parsed from `text`, holds no unstorable text, when the text shows it. */
export function recordStorableText(text: string, document: unknown): void {
  if (document !== null && typeof document === 'object' && !MAYBE_UNSTORABLE.test(text)) clearedDocuments.add(document);
}

export function findUnstorableText(data: unknown): readonly FieldError[] {
  if (data !== null && typeof data === 'object' && clearedDocuments.has(data)) return NONE;
  return holdsUnstorableText(data) ? unstorableTextOf(data) : NONE;
}

// Runs on every body not cleared from its text: plain loops, no closures or paths made per value
// (tsx's keepNames wraps each closure); the paths are built only when something is found.
function holdsUnstorableText(data: unknown): boolean {
  const stack: unknown[] = [data];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (isUnstorable(value)) return true;
    } else if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i += 1) stack.push(value[i]);
    } else if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = 0; i < keys.length; i += 1) {
        const key = keys[i]!;
        if (isUnstorable(key)) return true;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** Every unstorable string and key, with its field, in document order (at most 100). */
function unstorableTextOf(data: unknown): FieldError[] {
  const found: FieldError[] = [];
  const stack: Array<[unknown, string]> = [[data, '']];
  while (stack.length > 0 && found.length < 100) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (isUnstorable(value)) found.push({ code: 'invalid', detail: 'Text must not contain NUL characters or unpaired surrogates.', attr: path || 'non_field_errors' });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i -= 1) stack.push([value[i], joinPath(path, String(i))]);
    } else if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i -= 1) {
        const key = keys[i]!;
        // eslint-disable-next-line no-control-regex -- NUL is the character being replaced
        if (isUnstorable(key)) found.push({ code: 'invalid', detail: 'Field names must not contain NUL characters or unpaired surrogates.', attr: joinPath(path, key.replace(/[\u0000\ud800-\udfff]/g, '?')) });
        else stack.push([(value as Record<string, unknown>)[key], joinPath(path, key)]);
      }
    }
  }
  return found;
}

function isUnstorable(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}

function joinPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}
