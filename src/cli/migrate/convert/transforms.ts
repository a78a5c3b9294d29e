import { jsonNumber, type JsonNumber } from './json-text.ts';
import type { Target } from './targets.ts';

// The named transforms of a mapping and the typing of a field's text. A transform either returns
// the new value or throws a RowProblem, which sends the row to the rejects file with its reason.

export const REJECT_REASONS = [
  'required', 'invalid_date', 'invalid_number', 'invalid_boolean', 'unmapped_code',
  'orphan', 'duplicate_key', 'malformed_row', 'invalid_encoding', 'account_rejected', 'supply_point_rejected',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export class RowProblem extends Error {
  constructor(readonly reason: RejectReason, detail: string) { super(detail); }
}

export type Value = string | string[];
export type Transform = (value: Value) => Value;

/** Transforms that take no argument (written as a bare name). */
const SIMPLE: Record<string, Transform> = {
  trim: (v) => each(v, (s) => s.trim()),
  upper: (v) => each(v, (s) => s.toUpperCase()),
  lower: (v) => each(v, (s) => s.toLowerCase()),
  decimal_comma: (v) => each(v, decimalComma),
};
/** Transforms written as `name: argument`; each checks its argument when the mapping is read. */
const WITH_ARGUMENT: Record<string, (arg: unknown) => Transform> = {
  date: (format) => {
    if (typeof format !== 'string') throw new TypeError('date takes a format such as "%d/%m/%Y"');
    const parse = dateParser(format);
    return (v) => each(v, parse);
  },
  map: (table) => {
    if (!table || typeof table !== 'object' || Array.isArray(table)) throw new TypeError('map takes a mapping of codes, such as {E: ELECTRICITY}');
    const codes = new Map(Object.entries(table).map(([from, to]) => [from, String(to)]));
    return (v) => each(v, (s) => {
      const to = codes.get(s);
      if (to === undefined) throw new RowProblem('unmapped_code', `"${s}" is not one of the codes of the map (${[...codes.keys()].join(', ')})`);
      return to;
    });
  },
  split: (separator) => {
    if (typeof separator !== 'string' || separator === '') throw new TypeError('split takes a separator such as ";"');
    return (v) => (Array.isArray(v) ? v : v.split(separator).map((s) => s.trim()).filter((s) => s !== ''));
  },
};

export const TRANSFORM_NAMES = [...Object.keys(SIMPLE), ...Object.keys(WITH_ARGUMENT)];

/** One transform of a mapping (`trim`, or `{date: "%d/%m/%Y"}`); throws a TypeError naming what is wrong. */
export function compileTransform(spec: unknown): Transform {
  if (typeof spec === 'string') {
    const simple = SIMPLE[spec];
    if (simple) return simple;
    if (WITH_ARGUMENT[spec]) throw new TypeError(`${spec} needs an argument: write {${spec}: …}`);
    throw new TypeError(`unknown transform "${spec}" (known: ${TRANSFORM_NAMES.join(', ')})`);
  }
  if (spec && typeof spec === 'object' && !Array.isArray(spec) && Object.keys(spec).length === 1) {
    const [name, arg] = Object.entries(spec)[0]!;
    const make = WITH_ARGUMENT[name];
    if (make) return make(arg);
    if (SIMPLE[name]) throw new TypeError(`${name} takes no argument: write it as a bare name`);
    throw new TypeError(`unknown transform "${name}" (known: ${TRANSFORM_NAMES.join(', ')})`);
  }
  throw new TypeError('a transform is a name (trim) or one name with its argument ({date: "%d/%m/%Y"})');
}

function each(v: Value, f: (s: string) => string): Value {
  return Array.isArray(v) ? v.map(f) : f(v);
}

/**
 * "1.234,56" → "1234.56": the comma is the decimal point; a dot, a space or ' groups thousands, only
 * as groups of three digits after a first group of one to three ("1.000.000"), one kind of separator
 * in a number. Anything else ("12.50", "1,000.00", "1.2.3,4") is refused rather than read as some
 * other amount. The digits are kept as written: the target checks them and writes them as they are.
 */
const DECIMAL_COMMA = /^([-+]?)(\d{1,3}(?:([. \u00a0\u202f'])\d{3}(?:\3\d{3})*)?|\d+)(?:,(\d+))?$/;
function decimalComma(s: string): string {
  const match = DECIMAL_COMMA.exec(s.trim());
  if (!match) throw new RowProblem('invalid_number', `"${s}" is not a number with a decimal comma (such as 1.234,56)`);
  const [, sign, whole, separator, fraction] = match;
  const digits = separator ? whole!.replaceAll(separator, '') : whole!;
  return `${sign === '-' ? '-' : ''}${digits}${fraction === undefined ? '' : `.${fraction}`}`;
}

/** A date directive: its digits, the part of the date it gives, and whether it may be written unpadded (1/2/2024). */
interface Directive { width: number; part: 'day' | 'month' | 'year' | 'year2' | 'hour' | 'minute' | 'second'; unpadded?: true }
const DIRECTIVES: Record<string, Directive> = {
  d: { width: 2, part: 'day', unpadded: true },
  m: { width: 2, part: 'month', unpadded: true },
  Y: { width: 4, part: 'year' },
  y: { width: 2, part: 'year2' },
  H: { width: 2, part: 'hour', unpadded: true },
  M: { width: 2, part: 'minute' },
  S: { width: 2, part: 'second' },
};

/** A strftime-like format (%d %m %Y %y %H %M %S) read into YYYY-MM-DD, or YYYY-MM-DDTHH:MM:SSZ when it has a time. */
function dateParser(format: string): (s: string) => string {
  const items: (string | Directive)[] = [];
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== '%') { items.push(c); continue; }
    const directive = DIRECTIVES[format[++i] ?? ''];
    if (!directive) throw new TypeError(`date format "${format}": unknown directive %${format[i] ?? ''} (known: %d %m %Y %y %H %M %S)`);
    items.push(directive);
  }
  const parts: string[] = [];
  let source = '';
  items.forEach((item, i) => {
    if (typeof item === 'string') { source += item.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); return; }
    parts.push(item.part);
    // Beside another directive (a compact %d%m%Y) a day, month or hour takes its two digits: with one
    // allowed, 1112024 would be read as some date (11/1 or 1/11) rather than refused.
    const compact = typeof items[i - 1] === 'object' || typeof items[i + 1] === 'object';
    source += `(\\d{${item.unpadded && !compact ? `1,${item.width}` : item.width}})`;
  });
  for (const needed of ['day', 'month'] as const) if (!parts.includes(needed)) throw new TypeError(`date format "${format}" has no ${needed}`);
  if (!parts.includes('year') && !parts.includes('year2')) throw new TypeError(`date format "${format}" has no year`);
  const withTime = parts.includes('hour');
  const regex = new RegExp(`^${source}$`);
  return (s) => {
    const match = regex.exec(s.trim());
    const got: Record<string, number> = { hour: 0, minute: 0, second: 0 };
    if (match) parts.forEach((part, i) => { got[part] = Number(match[i + 1]); });
    // Two-digit years: 00-49 are this century, 50-99 the last (dates of birth, old agreements).
    if (got.year2 !== undefined) got.year = got.year2 < 50 ? 2000 + got.year2 : 1900 + got.year2;
    const day = new Date(Date.UTC(got.year!, got.month! - 1, got.day!));
    const real = match && day.getUTCDate() === got.day && day.getUTCMonth() === got.month! - 1 && got.hour! < 24 && got.minute! < 60 && got.second! < 60;
    if (!real) throw new RowProblem('invalid_date', `"${s}" is not a date in the format ${format}`);
    const iso = `${String(got.year).padStart(4, '0')}-${pad(got.month!)}-${pad(got.day!)}`;
    return withTime ? `${iso}T${pad(got.hour!)}:${pad(got.minute!)}:${pad(got.second!)}Z` : iso;
  };
}

const pad = (n: number) => String(n).padStart(2, '0');

const TRUE_WORDS = new Set(['true', 'yes', 'y', '1', 't']);
const FALSE_WORDS = new Set(['false', 'no', 'n', '0', 'f']);

/** The field's text (after its transforms) as the JSON value its target takes. */
export function typed(value: string, target: Target, column: string): string | number | JsonNumber | boolean {
  switch (target.type) {
    case 'text': case 'date': return value;
    case 'datetime': return /^\d{4}-\d\d-\d\d$/.test(value) ? `${value}T00:00:00Z` : value;
    case 'boolean': {
      const word = value.trim().toLowerCase();
      if (TRUE_WORDS.has(word)) return true;
      if (FALSE_WORDS.has(word)) return false;
      throw new RowProblem('invalid_boolean', `${column}: "${value}" is not a yes/no value (true/false, yes/no, y/n, 1/0)`);
    }
    case 'integer': case 'number': case 'money': {
      const pattern = target.type === 'integer' ? /^-?\d+$/ : /^-?\d+(\.\d+)?$/;
      if (!pattern.test(value.trim())) {
        throw new RowProblem('invalid_number', `${column}: "${value}" is not ${target.type === 'integer' ? 'a whole number' : 'a number with a decimal point (decimal_comma reads "12,50")'}`);
      }
      // Not Number() alone: a double would round 12.999999999999999999 to 13 and a 20-digit
      // integer to other digits. Leading zeros go (JSON does not allow them).
      return jsonNumber(value.trim().replace(/^(-?)0+(?=\d)/, '$1'));
    }
  }
}
