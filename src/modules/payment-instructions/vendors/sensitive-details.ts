// What a vendor returns is stored, minus anything that must never sit in our database (D9, PCI DSS):
// full card numbers, security codes, bank account numbers, credentials. Keys are compared without
// case, `_` or `-`, so `card_number`, `cardNumber` and `Card-Number` are all dropped.
const SENSITIVE_KEYS = new Set([
  'number', 'cardnumber', 'pan', 'primaryaccountnumber', 'cvc', 'cvc2', 'cvv', 'cvv2', 'csc', 'securitycode', 'pin',
  'iban', 'accountnumber', 'bankaccountnumber', 'track', 'track1', 'track2', 'trackdata',
  'secret', 'password', 'apikey', 'clientsecret',
].map(normaliseKey));

const MAX_DEPTH = 6;
const MAX_ITEMS = 100;

function normaliseKey(key: string): string {
  return key.toLowerCase().replace(/[_\-\s]/g, '');
}

/** A copy of a vendor object without sensitive fields, and without any value that is a card number. */
export function stripSensitive(value: Record<string, unknown>): Record<string, unknown> {
  return stripObject(value, 0);
}

function stripObject(value: Record<string, unknown>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value).slice(0, MAX_ITEMS)) {
    if (SENSITIVE_KEYS.has(normaliseKey(key))) continue;
    const kept = strip(item, depth + 1);
    if (kept !== undefined) out[key] = kept;
  }
  return out;
}

function strip(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return looksLikeCardNumber(value) ? undefined : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return undefined;
  if (Array.isArray(value)) return value.slice(0, MAX_ITEMS).map((v) => strip(v, depth + 1)).filter((v) => v !== undefined);
  return stripObject(value as Record<string, unknown>, depth);
}

// A card number under an innocent key ("label": "4242 4242 4242 4242") is caught by its shape:
// 13 to 19 digits, spaces or dashes allowed, with a valid Luhn check digit.
function looksLikeCardNumber(text: string): boolean {
  if (text.length > 40) return false;
  const digits = text.replace(/[\s-]/g, '');
  if (!/^\d{13,19}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}
