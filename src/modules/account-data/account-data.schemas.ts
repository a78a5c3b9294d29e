import { Type, type Static } from '@sinclair/typebox';
import { compileValidator, type Validator } from '../../core/validation.ts';
import type { FieldError } from '../../core/errors.ts';
import { ruleOf } from '../../core/rules.ts';
import { DateString, PastDate } from '../../schemas/dates.ts';
import { ExternalAccountNumber, ImportSupplierCode } from '../../schemas/identifiers.ts';
import { RequiredText, Text } from '../../schemas/text.ts';
import { ACCOUNT_DATA_RULES } from './account-data.rules.ts';
import { CountryCode, EmailOrEmpty, InternationalPhone } from './contact.schemas.ts';
import { BOUNDS, FIELD_RULES } from './field-checks.ts';
import { Note } from './note.schemas.ts';
import { SupplyPoint } from './supply-points.schemas.ts';

// The account import data of spec 2.3, written once: it validates validate-account and
// stage-account bodies (and staged data again at create), types the code, and documents itself in
// the OpenAPI document. Required fields are exactly those of D5; everything else is optional.

export * from './supply-points.schemas.ts';

/** An array whose item shape is undocumented: absent or empty only (`not_supported`). */
const Unsupported = (description: string) =>
  Type.Array(Type.Unknown(), { maxItems: 0, description });

export const ACCOUNT_LIMITS = {
  metadata: 50, customers: 10, alternativePhoneNumbers: 10, supplyAddresses: 20, supplyPoints: 50, notes: 100,
  metadataProperties: 100,
} as const;

export const BillingAddress = Type.Object({
  street_address: RequiredText(500, { description: 'May contain line breaks.' }),
  locality: Type.Optional(Text(200)),
  administrative_area: Type.Optional(Text(200)),
  country: CountryCode,
  postal_code: RequiredText(20, {
    description: 'A postcode of `country` (`invalid_postcode`): a valid UK postcode for GB, stored normalised (`sw1a1aa` is '
      + 'stored as `SW1A 1AA`); the country\'s format elsewhere, where it is known.',
  }),
}, { $id: 'BillingAddress', additionalProperties: false });
export type BillingAddress = Static<typeof BillingAddress>;

export const MetadataItem = Type.Object({
  key: Type.Optional(RequiredText(100)),
  value: Type.Optional(Type.Unsafe<Record<string, unknown>>({
    type: 'object', maxProperties: ACCOUNT_LIMITS.metadataProperties, ...ruleOf(FIELD_RULES, 'free-form'),
    description: `Free-form object: at most ${BOUNDS.freeFormDepth} levels of nesting and ${BOUNDS.freeFormChars} characters as JSON.`,
  })),
}, { $id: 'MetadataItem', additionalProperties: false });
export type MetadataItem = Static<typeof MetadataItem>;

export const AlternativePhoneNumber = Type.Object({
  phone_number: Type.Optional(Type.String({
    maxLength: BOUNDS.phone,
    description: 'Phone number; without a leading + it is read in the billing address\'s country (`invalid_phone_number`).',
  })),
}, { additionalProperties: false });
export type AlternativePhoneNumber = Static<typeof AlternativePhoneNumber>;

export const CustomerPreferences = Type.Object({
  opted_into_updates: Type.Optional(Type.Boolean()),
  opted_into_offers: Type.Optional(Type.Boolean()),
  opted_into_sms: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });
export type CustomerPreferences = Static<typeof CustomerPreferences>;

export const Customer = Type.Object({
  given_name: RequiredText(100),
  family_name: RequiredText(100),
  email: Type.Optional(EmailOrEmpty),
  mobile: Type.Optional(InternationalPhone),
  landline: Type.Optional(Type.String({
    maxLength: BOUNDS.phone,
    description: 'Phone number, or "" for none; without a leading + it is read in the billing address\'s country (`invalid_phone_number`).',
  })),
  alternative_phone_numbers: Type.Optional(Type.Array(AlternativePhoneNumber, { maxItems: ACCOUNT_LIMITS.alternativePhoneNumbers })),
  date_of_birth: Type.Optional(PastDate),
  customer_preferences: Type.Optional(CustomerPreferences),
  user_details: Type.Optional(Unsupported('Absent or empty only (`not_supported`).')),
}, { $id: 'Customer', additionalProperties: false });
export type Customer = Static<typeof Customer>;

export const SupplyAddress = Type.Object({
  supply_address1: RequiredText(200),
  supply_address2: Type.Optional(Text(200)),
  supply_address3: Type.Optional(Text(200)),
  supply_address4: Type.Optional(Text(200)),
  supply_postcode: RequiredText(20, {
    description: 'A postcode of the billing address\'s country (`invalid_postcode`), stored normalised for GB as `postal_code` is.',
  }),
  customer_at_supply_address_from_date: Type.Optional(DateString),
  supply_points: Type.Array(SupplyPoint, { maxItems: ACCOUNT_LIMITS.supplyPoints }),
}, { $id: 'SupplyAddress', additionalProperties: false });
export type SupplyAddress = Static<typeof SupplyAddress>;

export const AccountData = Type.Object({
  external_account_number: ExternalAccountNumber,
  import_supplier: ImportSupplierCode,
  billing_address: BillingAddress,
  metadata: Type.Optional(Type.Array(MetadataItem, { maxItems: ACCOUNT_LIMITS.metadata })),
  customers: Type.Array(Customer, { minItems: 1, maxItems: ACCOUNT_LIMITS.customers }),
  supply_addresses: Type.Array(SupplyAddress, { maxItems: ACCOUNT_LIMITS.supplyAddresses }),
  ledgers: Type.Optional(Unsupported('Absent or empty only (`not_supported`).')),
  statements: Type.Optional(Unsupported('Absent or empty only (`not_supported`); import statements with historical-statements/create.')),
  notes: Type.Optional(Type.Array(Note, { maxItems: ACCOUNT_LIMITS.notes })),
  unknown_occupier: Type.Optional(Type.Boolean()),
}, {
  $id: 'AccountData',
  additionalProperties: false,
  'x-error-code': 'account_failed_validation',
  ...ruleOf(ACCOUNT_DATA_RULES, 'account-data'),
  description: 'The data of one account to import. The required fields are listed; every other field may be omitted, '
    + 'and an undocumented field is refused (`unknown_field`). Across fields: `last_billed_to_date` >= `supply_start_date` '
    + '(`invalid_date_range`); postcodes are read in `billing_address.country` (`invalid_postcode`); ELECTRICITY identifiers are unique within the data (`duplicate`); a landline or alternative '
    + 'number without + is read in `billing_address.country` (`invalid_phone_number`); a note needs a body or a document '
    + 'path. Each field lists its bounds; a failure is `account_failed_validation` with one item per problem in `errors`.',
});
export type AccountData = Static<typeof AccountData>;

let validator: Validator | undefined;

/** Every field error of `data` as account data, in document order, or null when it is valid. */
export function validateAccountData(data: unknown): FieldError[] | null {
  validator ??= compileValidator(AccountData);
  return validator(data);
}
