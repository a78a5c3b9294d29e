import countries from 'i18n-iso-countries';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import { registerRules } from '../../http/validation.ts';

// Checks of single values that JSON Schema cannot express (a real country, a real phone number, a
// relative path). Each is a pure function, reused by the cross-field rules, and registered as a rule
// set so a string schema can carry it with `x-rules` (its errors then point at that string).
// They run even when the schema already failed the value, so they look at well-typed, in-bound
// strings only: a value that is too long or of the wrong type already has its own error.

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A real calendar date in YYYY-MM-DD form (UTC, no time zone involved). */
export function isRealDate(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = DATE.exec(value);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === value;
}

/** An ISO 3166-1 alpha-2 code in capitals, as assigned today (i18n-iso-countries). */
export function isCountryCode(value: string): boolean {
  return /^[A-Z]{2}$/.test(value) && countries.isValid(value);
}

// ajv-formats' "full" email pattern: a local part, `@`, and a domain of dot-separated labels.
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export function isEmail(value: string): boolean {
  return EMAIL.test(value);
}

/**
 * A phone number valid by libphonenumber's full metadata. With a leading `+` it is read as
 * international; without one it is read in `country` (and is invalid when there is none).
 */
export function isPhoneNumber(value: string, country?: string): boolean {
  const international = value.startsWith('+');
  if (!international && !country) return false;
  const parsed = parsePhoneNumberFromString(value, {
    ...(international ? {} : { defaultCountry: country as CountryCode }),
    extract: false,
  });
  return parsed?.isValid() ?? false;
}

/** A path relative to the supplier's documents root (D8): no leading `/`, no `..`, no empty segment, no `\`. */
export function isRelativeDocumentPath(value: string): boolean {
  if (value === '' || value.includes('\\')) return false;
  if (/[\u0000-\u001f\u007f]/.test(value)) return false;
  return value.split('/').every((segment) => segment !== '' && segment !== '..' && segment !== '.');
}

export const BOUNDS = {
  email: 254,
  phone: 32,
  documentPath: 500,
} as const;

const inBounds = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;

registerRules('country-code', (value) =>
  inBounds(value, 2) && value !== '' && !isCountryCode(value)
    ? [{ path: '', code: 'invalid_country', detail: `"${value}" is not an ISO 3166-1 alpha-2 country code (for example GB).` }]
    : []);

registerRules('email-or-empty', (value) =>
  inBounds(value, BOUNDS.email) && value !== '' && !isEmail(value)
    ? [{ path: '', code: 'invalid_email', detail: 'Enter a valid email address.' }]
    : []);

registerRules('international-phone', (value) =>
  inBounds(value, BOUNDS.phone) && !isPhoneNumber(value)
    ? [{ path: '', code: 'invalid_phone_number', detail: 'Enter a valid phone number in international format with a leading +.' }]
    : []);

registerRules('document-path', (value) =>
  inBounds(value, BOUNDS.documentPath) && value !== '' && !isRelativeDocumentPath(value)
    ? [{ path: '', code: 'invalid_document_path', detail: 'Use a path relative to the documents root: no leading "/", no "..", no empty segment, no "\\".' }]
    : []);
