/**
 * Codes that appear in URL paths (external account numbers, supplier codes, D5): not empty, no
 * surrounding white space, no `/`, not `.` or `..` (an HTTP client resolves them as path segments, so
 * the account's URLs would name another path), no control characters (Unicode Cc) and no format
 * characters (Cf: zero-width space, RTL override, BOM…, invisible or reordering what is shown).
 * Empty is `blank`, not also `invalid`. Ajv compiles patterns with the `u` flag.
 */
export const PATH_SAFE_PATTERN =
  '^(?!\\.{1,2}$)(?:[^\\s/\\p{Cc}\\p{Cf}](?:[^/\\p{Cc}\\p{Cf}]*[^\\s/\\p{Cc}\\p{Cf}])?)?$';

/**
 * An identifier that is matched as written (an electricity supply point's, unique across every
 * account): no surrounding white space and no control or format characters, which would make one
 * meter point look like two (`"123 "` beside `"123"`, a zero-width space) while they print the same.
 */
export const MATCHED_IDENTIFIER_PATTERN = '^[^\\s\\p{Cc}\\p{Cf}](?:[^\\p{Cc}\\p{Cf}]*[^\\s\\p{Cc}\\p{Cf}])?$';

/**
 * A payment instruction's reference at its vendor: it becomes one segment of the vendor's URL path
 * (`/payment-instructions/{reference}`), sent with the vendor's secret. Only RFC 3986 unreserved
 * characters (letters, digits, `-`, `.`, `_`, `~`), which no client or server decodes or rewrites, and
 * not only dots: `.` and `..` are path segments that a URL resolves away (`..` asked the vendor's `/`),
 * and `%`, `/`, `\`, `?`, `#` and anything else could name another path after some decoding.
 */
export const VENDOR_REFERENCE_PATTERN = '^(?!\\.+$)[A-Za-z0-9._~-]+$';
