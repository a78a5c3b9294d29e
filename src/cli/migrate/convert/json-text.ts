// A record as one JSON line, numbers keeping the value written in the source. JSON.stringify writes
// a number as the double it became: `12.999999999999999999` would reach the book as 13 and pass the
// service's check on decimal places, and a 20-digit integer would lose its last digits. A number a
// double holds exactly is a plain number (written by JSON.stringify, fast: nearly every number);
// any other is a JsonNumber, kept as its text and written as it is (Node 20 has no JSON.rawJSON).

export class JsonNumber {
  /** `text` is a JSON number already (checked by the caller's pattern, leading zeros dropped). */
  constructor(readonly text: string) {}
  /** Tells recordJson that this record needs the slow path; JSON.stringify cannot write raw text. */
  toJSON(): never { throw new RawNumber(); }
}

class RawNumber extends Error {}

/** The JSON value of a decimal text (`-?digits(.digits)?`): a number when a double holds it exactly. */
export function jsonNumber(text: string): number | JsonNumber {
  const value = Number(text);
  return String(value) === canonical(text) ? value : new JsonNumber(text);
}

/** The shortest text of a decimal's value, as String(number) writes it short of exponents. */
function canonical(text: string): string {
  const [whole = '', fraction = ''] = text.split('.');
  const digits = whole.replace(/^-/, '').replace(/^0+(?=\d)/, '');
  const kept = fraction.replace(/0+$/, '');
  const plain = kept ? `${digits}.${kept}` : digits;
  return whole.startsWith('-') && plain !== '0' ? `-${plain}` : plain;
}

/** JSON of a record made of plain objects, arrays, strings, numbers, booleans and JsonNumbers. */
export function recordJson(record: unknown): string {
  try { return JSON.stringify(record); } catch (error) {
    if (!(error instanceof RawNumber)) throw error;
    return withRawNumbers(record);
  }
}

function withRawNumbers(value: unknown): string {
  if (value instanceof JsonNumber) return value.text;
  if (Array.isArray(value)) return `[${value.map(withRawNumbers).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    let out = '';
    for (const [name, item] of Object.entries(value)) {
      if (item === undefined) continue;
      out += `${out ? ',' : ''}${JSON.stringify(name)}:${withRawNumbers(item)}`;
    }
    return `{${out}}`;
  }
  return JSON.stringify(value);
}
