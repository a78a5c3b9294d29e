import type { FieldError } from './errors.ts';

/**
 * PostgreSQL cannot store a NUL character in text or jsonb, nor an unpaired UTF-16 surrogate in
 * jsonb. JSON can carry both, so every string and key of a body (free-form values included) is
 * checked here, once, instead of failing at the store. The walk is iterative: bodies nest freely.
 */
// Runs on every body: plain loops, no closures made per value (tsx's keepNames wraps each one).
export function findUnstorableText(data: unknown): FieldError[] {
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
