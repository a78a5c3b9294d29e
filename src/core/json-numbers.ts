// JSON numbers checked against the text that was sent (issue #14). JSON.parse turns `1e309` into
// Infinity (stored as null), `1e-400` into 0 and `1.1000000000000001` into 1.1, silently. Node 20's
// JSON.parse gives a reviver no source text, so after the parse one pass over the same text finds
// each number whose value differs from what was written, and remembers its source text by field
// (dot path) against the parsed document. Validation then refuses such a number at its field, and
// counts decimal places on the sent text (validation.ts).
//
// The pass is iterative (bodies nest 10,000 deep) and is skipped entirely when no literal could be
// inexact: a decimal of at most 15 significant digits and no exponent always survives a double.

export const INEXACT_NUMBER_DETAIL = 'This number cannot be kept exactly as sent (too large, too small or too many digits); send at most 15 significant digits.';

const inexactByDocument = new WeakMap<object, Map<string, string>>();

// The start of a literal that could be inexact: 16 digits, 17 digits-and-dot, or a mantissa with an
// exponent. In a document that is an object or an array, every number follows a `[`, `:` or `,` and
// JSON white space; text inside strings may match too ("ref: 1E5 …"), which only costs the full pass.
// Anchoring at that delimiter keeps hex ids and serial numbers ("A1E5-…") from matching every time.
const MAYBE_INEXACT = /[[:,]\s*-?(?:\d{16}|[\d.]{17}|\d[\d.]*[eE])/;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Scans `text` (already parsed into `document`) and records the numbers the parse changed. */
export function recordInexactNumbers(text: string, document: unknown): void {
  if (!document || typeof document !== 'object' || !MAYBE_INEXACT.test(text)) return;
  const found = new Map<string, string>();
  // One frame per open container: an array's next index, or an object's current key (as a span of
  // the text, decoded only when a number under it must be named).
  const kinds: Array<'a' | 'o'> = [];
  const indexes: number[] = [];
  const keyStarts: number[] = [];
  const keyEnds: number[] = [];
  let expectKey = false;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      kinds.push(c === 0x7b ? 'o' : 'a');
      indexes.push(0);
      keyStarts.push(-1);
      keyEnds.push(-1);
      expectKey = c === 0x7b;
      i += 1;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      kinds.pop(); indexes.pop(); keyStarts.pop(); keyEnds.pop();
      i += 1;
    } else if (c === 0x2c /* , */) {
      const top = kinds.length - 1;
      if (kinds[top] === 'a') indexes[top]! += 1;
      else expectKey = true;
      i += 1;
    } else if (c === 0x22 /* " */) {
      const end = stringEnd(text, i);
      if (expectKey) {
        keyStarts[kinds.length - 1] = i;
        keyEnds[kinds.length - 1] = end;
        expectKey = false;
      }
      i = end + 1;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = i;
      const literal = NUMBER.exec(text)![0];
      if (literal.length > 15 || /[eE]/.test(literal)) {
        if (!isExact(literal)) found.set(pathAt(text, kinds, indexes, keyStarts, keyEnds), literal);
      }
      i += literal.length;
    } else {
      i += 1; // white space, ':', true, false, null
    }
  }
  if (found.size > 0) inexactByDocument.set(document, found);
}

/** The numbers of a parsed body whose value differs from their text, by dot path; none: undefined. */
export function inexactNumbersOf(document: unknown): ReadonlyMap<string, string> | undefined {
  return document && typeof document === 'object' ? inexactByDocument.get(document) : undefined;
}

/** Decimal places of a number as written (`1.10` has 1, `1.5e-3` has 4, `12e3` has 0). */
export function decimalPlacesOf(literal: string): number {
  const { digits, exponent } = normalised(literal);
  return digits === '0' ? 0 : Math.max(0, -exponent);
}

function isExact(literal: string): boolean {
  const value = Number(literal);
  if (!Number.isFinite(value)) return false;
  const sent = normalised(literal);
  const kept = normalised(String(value));
  return sent.digits === kept.digits && sent.exponent === kept.exponent && sent.negative === kept.negative;
}

/** A decimal as sign, significant digits without leading or trailing zeros, and a power of ten. */
function normalised(literal: string): { negative: boolean; digits: string; exponent: number } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!match) return { negative: false, digits: 'NaN', exponent: 0 };
  const fraction = match[3] ?? '';
  let digits = `${match[2]}${fraction}`.replace(/^0+/, '');
  let exponent = Number(match[4] ?? 0) - fraction.length;
  const trimmed = digits.replace(/0+$/, '');
  exponent += digits.length - trimmed.length;
  digits = trimmed;
  if (digits === '') return { negative: false, digits: '0', exponent: 0 };
  return { negative: match[1] === '-', digits, exponent };
}

function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  for (;;) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === 0x5c /* \ */) slashes += 1;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

function pathAt(text: string, kinds: Array<'a' | 'o'>, indexes: number[], keyStarts: number[], keyEnds: number[]): string {
  const parts: string[] = [];
  for (let level = 0; level < kinds.length; level += 1) {
    parts.push(kinds[level] === 'a' ? String(indexes[level]) : JSON.parse(text.slice(keyStarts[level], keyEnds[level]! + 1)) as string);
  }
  return parts.length === 0 ? 'non_field_errors' : parts.join('.');
}
