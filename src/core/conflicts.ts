import { AppError, type FieldError } from './errors.ts';
import { normaliseDecimal } from './decimal-text.ts';

// An imported history item (a transaction, a statement, a payment instruction) sent again under the
// identifier of one already stored: only an exact repeat is "already existing". Anything else would be
// dropped in silence while the client believes its figures were kept, so it is a 400 `conflict`
// naming each field that differs, on every endpoint and job step alike.

/** How two values of a field are compared: money as exact decimals ("10.0" is "10.00"), json deeply, the rest as they are. */
export type ComparedAs = 'value' | 'money' | 'json';

export interface ComparedField {
  /** The field's name in the request item, also the last part of the error's `attr`. */
  name: string;
  stored: unknown;
  /** As the request sends it; absent is null. Money as a decimal string, never a float. */
  sent: unknown;
  as?: ComparedAs;
}

/**
 * One `conflict` item per field whose sent value is not the stored one. `item` names the stored item
 * for people (`Transaction "SAME-1"`); `path` is where it sits in the request (`transactions.0`).
 */
export function differences(item: string, path: string, fields: ComparedField[]): FieldError[] {
  return fields.filter((field) => !same(field)).map((field) => ({
    code: 'conflict',
    attr: path ? `${path}.${field.name}` : field.name,
    detail: detailOf(item, field),
  }));
}

/** The request's answer when `errors` holds any item of `differences` (other items may be beside them). */
export function conflictError(errors: FieldError[]): AppError {
  return new AppError('conflict',
    'Items of this request were imported before with other content; only an exact repeat is accepted as already existing.', { errors });
}

function same({ stored, sent, as = 'value' }: ComparedField): boolean {
  const [a, b] = [stored ?? null, sent ?? null];
  if (a === null || b === null) return a === b;
  if (as === 'money') return moneyText(a) === moneyText(b);
  if (as === 'json') return canonicalJson(a) === canonicalJson(b);
  return a === b;
}

function detailOf(item: string, { name, stored, sent, as = 'value' }: ComparedField): string {
  const [a, b] = [shown(stored, as), shown(sent, as)];
  if (a === undefined || b === undefined) return `${item} exists with other ${name} than this request sends.`;
  return `${item} exists ${a === 'none' ? `without ${name}` : `with ${name} ${a}`}; this request sends ${b}.`;
}

/** A value as a detail shows it: short words bare, other text quoted, money with two decimals; undefined when too big to show. */
function shown(value: unknown, as: ComparedAs): string | undefined {
  if (value === null || value === undefined) return 'none';
  if (as === 'money') return moneyText(value);
  if (typeof value !== 'string' || value.length > 100) return undefined;
  return /^[\w.:+-]+$/.test(value) ? value : JSON.stringify(value);
}

/** Money as one text: two decimals at least ("10" and "10.0" are "10.00"); text that is no decimal stays as it is. */
function moneyText(value: unknown): string {
  try {
    return normaliseDecimal(String(value));
  } catch {
    return String(value);
  }
}

/** JSON with object keys sorted at every level: jsonb does not keep the order a client sent. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
    : v));
}
