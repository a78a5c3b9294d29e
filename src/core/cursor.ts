import { AppError } from './errors.ts';

// The keyset cursor of every paged list: opaque to clients, base64url of the JSON array of the last
// row's key. Read back strictly: a cursor of another length, or one that is not JSON, is refused
// (a list given `[1,2,3]` where it wrote `[1]` must not read it as 1).

export const BAD_CURSOR_DETAIL = 'This cursor is not one the service gave; use the Link header of the previous page.';

export function encodeCursor(key: readonly unknown[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** The key a cursor holds, when it is an array of `length` values; the caller checks their types. */
export function cursorKey(cursor: string, length: number): unknown[] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor();
  }
  if (!Array.isArray(value) || value.length !== length) throw badCursor();
  return value;
}

/** The one refusal of a cursor, at the `cursor` parameter. */
export const badCursor = (): AppError => AppError.field('invalid', BAD_CURSOR_DETAIL, 'cursor');

/** The refusal's body, for the OpenAPI examples of every paged list. */
export const BAD_CURSOR = { detail: BAD_CURSOR_DETAIL, code: 'invalid', errors: [{ detail: BAD_CURSOR_DETAIL, code: 'invalid', attr: 'cursor' }] };
