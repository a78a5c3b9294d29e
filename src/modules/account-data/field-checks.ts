import countries from 'i18n-iso-countries';
import { isRealDate } from '../../core/dates.ts';
import { NO_FINDINGS, type RuleCheck } from '../../core/rules.ts';
import { parsePhoneNumber } from './phone-library.ts';

export { isRealDate };

// Checks of single values that JSON Schema cannot express (a real country, a real phone number, a
// relative path). Each is a pure function, reused by the cross-field rules, and one of FIELD_RULES
// so a string schema can carry it (`ruleOf(FIELD_RULES, …)`: its errors then point at that string).
// They run even when the schema already failed the value, so they look at well-typed, in-bound
// strings only: a value that is too long or of the wrong type already has its own error.

const ALPHA_2 = /^[A-Z]{2}$/;

/** An ISO 3166-1 alpha-2 code in capitals, as assigned today (i18n-iso-countries). */
export function isCountryCode(value: string): boolean {
  return ALPHA_2.test(value) && countries.isValid(value);
}

// ajv-formats' "full" email pattern: a local part, `@`, and a domain of dot-separated labels.
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export function isEmail(value: string): boolean {
  return EMAIL.test(value);
}

/** The detail of a number that is shaped like one of its country calling code but in no range in use. */
const unallocatedNumberDetail = (callingCode: string): string =>
  `This number has a valid format for country code +${callingCode} but is not a real number: no numbers are allocated in its range.`;

/**
 * Why `value` is not a phone number valid by libphonenumber's full metadata, or null when it is. With a
 * leading `+` it is read as international; without one it is read in `country` (and is malformed when
 * there is none). Three answers tell a sender what to fix: `malformed` (the caller's words) when it is
 * not a phone number at all (no `+` where one is needed, letters, a length no number of its country
 * code has); the drama-range detail; or, for a number of the right shape in a range that is not in use,
 * a detail that says so rather than asking for the `+` it already has.
 */
export function phoneNumberProblem(value: string, country: string | undefined, malformed: string): string | null {
  const international = value.startsWith('+');
  if (!international && !country) return malformed;
  const parsed = parsePhoneNumber(value, international ? undefined : country);
  if (parsed?.isValid()) return null;
  // The drama check reads the number as it was just read (international, or national in GB), so
  // the parse is not made twice.
  if ((international || country === 'GB') && isDramaRange(parsed)) return DRAMA_NUMBER_DETAIL;
  return parsed?.isPossible() ? unallocatedNumberDetail(parsed.countryCallingCode) : malformed;
}

// Ofcom keeps these UK ranges for drama and fiction (TV, film, books): they look real and never
// ring anyone. Some pass libphonenumber's metadata and some do not; those refused are refused with
// a message that says why, rather than one about format. National significant numbers (no 0, no +44).
const UK_DRAMA_RANGES = [
  /^7700900\d{3}$/, // mobile 07700 900000-900999
  /^1(?:1[3-8]|[2-6]1)4960\d{3}$/, // 0113-0118, 0121-0161 496 0000-0999
  /^1914980\d{3}$/, /^2079460\d{3}$/, /^2896496\d{3}$/, /^2920180\d{3}$/, /^1632960\d{3}$/,
  /^8081570\d{3}$/, /^9098790\d{3}$/, /^3069990\d{3}$/,
];

export const DRAMA_NUMBER_DETAIL = 'This number is in a UK range reserved for drama and fiction (TV, film, books): it is not a real phone number.';

/** A UK number (+44, read as international or as national in GB) from a range reserved for drama. */
function isDramaRange(parsed: ReturnType<typeof parsePhoneNumber>): boolean {
  return parsed?.countryCallingCode === '44' && UK_DRAMA_RANGES.some((range) => range.test(parsed.nationalNumber));
}

/** A path relative to the supplier's documents root (D8): no leading `/`, no `..`, no empty segment, no `\`. */
export function isRelativeDocumentPath(value: string): boolean {
  if (value === '' || value.includes('\\')) return false;
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\u0000-\u001f\u007f]/.test(value)) return false;
  return value.split('/').every((segment) => segment !== '' && segment !== '..' && segment !== '.');
}

export const BOUNDS = {
  /** Free-form values (metadata `value`): levels of nesting, and characters of their JSON text. */
  freeFormDepth: 32,
  freeFormChars: 65_536,
  email: 254,
  phone: 32,
  documentPath: 500,
} as const;

const MALFORMED_INTERNATIONAL = 'Enter a valid phone number in international format with a leading +.';

const inBounds = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;

/**
 * A free-form value (metadata `value`) nests at most BOUNDS.freeFormDepth levels and its JSON text is
 * at most BOUNDS.freeFormChars characters. The depth is found by an iterative walk that stops at the
 * bound, before anything recursive (JSON.stringify, the store's jsonb, the response serialiser)
 * touches the value; the size is measured only once the depth is known to be small.
 */
export function freeFormProblem(value: unknown): { code: string; detail: string } | null {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > BOUNDS.freeFormDepth) {
      return { code: 'invalid', detail: `Ensure this value is nested no more than ${BOUNDS.freeFormDepth} levels deep.` };
    }
    const children = Array.isArray(item) ? item : Object.values(item);
    for (let i = 0; i < children.length; i += 1) stack.push([children[i], depth + 1]);
  }
  if (JSON.stringify(value).length > BOUNDS.freeFormChars) {
    return { code: 'max_length', detail: `Ensure this value has no more than ${BOUNDS.freeFormChars} characters as JSON.` };
  }
  return null;
}

export const FIELD_RULES = {
  'country-code': (value) =>
    inBounds(value, 2) && value !== '' && !isCountryCode(value)
      ? [{ path: '', code: 'invalid_country', detail: `"${value}" is not an ISO 3166-1 alpha-2 country code (for example GB).` }]
      : NO_FINDINGS,
  'email-or-empty': (value) =>
    inBounds(value, BOUNDS.email) && value !== '' && !isEmail(value)
      ? [{ path: '', code: 'invalid_email', detail: 'Enter a valid email address.' }]
      : NO_FINDINGS,
  'international-phone': (value) => {
    const detail = inBounds(value, BOUNDS.phone) ? phoneNumberProblem(value, undefined, MALFORMED_INTERNATIONAL) : null;
    return detail ? [{ path: '', code: 'invalid_phone_number', detail }] : NO_FINDINGS;
  },
  'document-path': (value) =>
    inBounds(value, BOUNDS.documentPath) && value !== '' && !isRelativeDocumentPath(value)
      ? [{ path: '', code: 'invalid_document_path', detail: 'Use a path relative to the documents root: no leading "/", no "..", no empty segment, no "\\".' }]
      : NO_FINDINGS,
  'free-form': (value) => {
    const problem = value !== undefined ? freeFormProblem(value) : null;
    return problem ? [{ path: '', ...problem }] : NO_FINDINGS;
  },
} satisfies Record<string, RuleCheck>;
