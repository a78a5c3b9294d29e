import { Type } from '@sinclair/typebox';
import { ruleOf } from '../../core/rules.ts';
import { BOUNDS, FIELD_RULES } from './field-checks.ts';

// The contact fields of the account data, each carrying its own check (field-checks.ts).

/** An email address, or `""` for none (D5: checked only when not empty). */
export const EmailOrEmpty = Type.String({
  maxLength: BOUNDS.email, ...ruleOf(FIELD_RULES, 'email-or-empty'), description: 'Email address, or "" for none (`invalid_email`).',
});

/** A phone number in international format with a leading `+` (`invalid_phone_number`). */
export const InternationalPhone = Type.String({
  maxLength: BOUNDS.phone, ...ruleOf(FIELD_RULES, 'international-phone'),
  description: 'Phone number in international format with a leading + (`invalid_phone_number`).',
});

/** An ISO 3166-1 alpha-2 code in capitals (`invalid_country`). */
export const CountryCode = Type.String({
  minLength: 1, maxLength: 2, ...ruleOf(FIELD_RULES, 'country-code'),
  description: 'ISO 3166-1 alpha-2 country code in capitals, for example GB (`invalid_country`).',
});
