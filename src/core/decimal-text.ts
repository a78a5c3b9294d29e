// Money as decimal text, compared and written as scaled integers (BigInt), never as JS numbers. The
// store sums numeric itself and answers it as text; the wire carries the same text.

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

interface Scaled { units: bigint; scale: number }

function scaled(text: string): Scaled {
  const match = DECIMAL.exec(text);
  if (!match) throw new Error(`not a decimal: ${text}`);
  const fraction = match[3] ?? '';
  const units = BigInt(`${match[2]}${fraction}`);
  return { units: match[1] ? -units : units, scale: fraction.length };
}

function atScale(value: Scaled, scale: number): bigint {
  return value.units * 10n ** BigInt(scale - value.scale);
}

/** The same amount written once: at least two decimals, no trailing zeros beyond them ("-12.5" → "-12.50"). */
export function normaliseDecimal(text: string): string {
  const value = scaled(text);
  let { units, scale } = value;
  while (scale > 2 && units % 10n === 0n) {
    units /= 10n;
    scale -= 1;
  }
  return scale < 2 ? formatScaled(atScale(value, 2), 2) : formatScaled(units, scale);
}

function formatScaled(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const text = scale === 0 ? whole : `${whole}.${digits.slice(digits.length - scale)}`;
  return negative ? `-${text}` : text;
}

/** The exact sum of two amounts, at the larger of their two scales ("1.5" + "-0.25" → "1.25"). */
export function addDecimals(a: string, b: string): string {
  const [x, y] = [scaled(a), scaled(b)];
  const scale = Math.max(x.scale, y.scale);
  return formatScaled(atScale(x, scale) + atScale(y, scale), scale);
}
