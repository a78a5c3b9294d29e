import { Type } from '@sinclair/typebox';

// Money: a JSON number on the way in (at most two decimals, counted on the text sent), a decimal
// string with two decimals on the way out, numeric(14, 2) in the store.

/** Largest amount numeric(14, 2) holds. */
export const MAX_AMOUNT = 999_999_999_999.99;

/** A positive amount whose sign another field gives. */
export const PositiveAmount = Type.Number({ exclusiveMinimum: 0, maximum: MAX_AMOUNT, 'x-decimal-places': 2, description: 'Positive, at most two decimals; the type gives the sign' });

/** An amount of either sign. */
export const SignedAmount = Type.Number({ minimum: -MAX_AMOUNT, maximum: MAX_AMOUNT, 'x-decimal-places': 2, description: 'At most two decimals' });

// JSON numbers become decimal strings without float arithmetic: the number's shortest text
// (String(0.1) is '0.1', the digits the client sent when it sent at most 17 significant ones) is
// rewritten, never computed. Sums are done by PostgreSQL over numeric, never here.

/** The number's shortest representation as a plain decimal string (no exponent). */
export function decimalString(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  const text = String(value);
  const match = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!match) return text;
  const [, sign, whole, fraction = '', exp] = match;
  const digits = whole! + fraction;
  const point = whole!.length + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** Money with exactly two decimals ('12.3' → '12.30'); the value must have at most two already. */
export function moneyString(value: number): string {
  const [whole, fraction = ''] = decimalString(value).split('.');
  if (fraction.length > 2) throw new RangeError(`more than two decimals: ${value}`);
  return `${whole}.${fraction.padEnd(2, '0')}`;
}
