import { Type, type TSchema, type TUnsafe } from '@sinclair/typebox';
import { DATE_MAX, DATE_MIN } from '../../core/dates.ts';
import { PATH_SAFE_PATTERN } from '../../core/identifiers.ts';
import { BOUNDS } from './field-checks.ts';

// Building blocks shared by the account data and the notes / statements payloads. Every string
// has a maxLength and every array a maxItems (D5); the bounds are listed in docs/validation.md.

/**
 * A real calendar date, YYYY-MM-DD (`2023-02-30` is `invalid`), from DATE_MIN to DATE_MAX
 * (`min_value` / `max_value`): the one date rule of src/core/dates.ts.
 */
export const DateString = Type.String({
  format: 'date', maxLength: 10, 'x-rules': 'date', description: `Date, YYYY-MM-DD, from ${DATE_MIN} to ${DATE_MAX}.`,
});

/** A date of birth: the date rule, and not in the future (`max_value`). */
export const DateOfBirth = Type.String({
  format: 'date', maxLength: 10, 'x-rules': 'date-of-birth', description: `Date, YYYY-MM-DD, from ${DATE_MIN}, not in the future.`,
});

/** A UTC datetime with `Z`, whole seconds or up to 6 decimals, its date within the date rule. */
export const UtcDateTime = Type.String({
  format: 'utc-date-time', maxLength: 32, 'x-rules': 'utc-date-time',
  description: `UTC datetime, YYYY-MM-DDTHH:MM:SSZ, from ${DATE_MIN} to ${DATE_MAX}.`,
});

/** Free text: may be empty unless `minLength` is given. */
export const Text = (maxLength: number, options: Record<string, unknown> = {}) =>
  Type.String({ maxLength, ...options });

/** Text that must not be empty (`blank`). */
export const RequiredText = (maxLength: number, options: Record<string, unknown> = {}) =>
  Type.String({ minLength: 1, maxLength, ...options });

/** `string | null`, as one `type: ['string', 'null']` so errors stay those of the string. */
export const NullableText = (maxLength: number, description?: string): TUnsafe<string | null> =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength, ...(description ? { description } : {}) });

export { PATH_SAFE_PATTERN };

export const PathSafeCode = (maxLength: number, description: string) =>
  Type.String({ minLength: 1, maxLength, pattern: PATH_SAFE_PATTERN, description });

export const ImportSupplierCode = PathSafeCode(64,
  'Import supplier code, case-sensitive: 1-64 characters, no surrounding white space, no "/", not "." or "..", no control or format characters.');

export const ExternalAccountNumber = PathSafeCode(100,
  'The supplier\'s own account number, case-sensitive: 1-100 characters, no surrounding white space, no "/", not "." or "..", no control or format characters.');

/** An email address, or `""` for none (D5: checked only when not empty). */
export const EmailOrEmpty = Type.String({
  maxLength: BOUNDS.email, 'x-rules': 'email-or-empty', description: 'Email address, or "" for none (`invalid_email`).',
});

/** A phone number in international format with a leading `+` (`invalid_phone_number`). */
export const InternationalPhone = Type.String({
  maxLength: BOUNDS.phone, 'x-rules': 'international-phone',
  description: 'Phone number in international format with a leading + (`invalid_phone_number`).',
});

/** An ISO 3166-1 alpha-2 code in capitals (`invalid_country`). */
export const CountryCode = Type.String({
  minLength: 1, maxLength: 2, 'x-rules': 'country-code',
  description: 'ISO 3166-1 alpha-2 country code in capitals, for example GB (`invalid_country`).',
});

/** A closed set from one `as const` array (`invalid_choice`). */
export const Choice = <T extends readonly string[]>(values: T, description?: string): TUnsafe<T[number]> =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

/** An array whose item shape is undocumented: absent or empty only (`not_supported`). */
export const Unsupported = (description: string) =>
  Type.Array(Type.Unknown(), { maxItems: 0, description });

/** Any schema made nullable as `type: [T, 'null']` (validation.ts: never anyOf). */
export function Nullable<T extends TSchema>(schema: T) {
  const { type } = schema as unknown as { type: string };
  return Type.Unsafe<T['static'] | null>({ ...schema, type: [type, 'null'] });
}
