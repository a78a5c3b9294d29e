import { Type, type Static } from '@sinclair/typebox';

// The 400 body of spec 7.1 / D4, for the OpenAPI document of the account data routes.
export const FieldErrorItem = Type.Object({
  detail: Type.String({ description: 'Human-readable; wording may change.' }),
  code: Type.String({ description: 'Stable machine-readable code, for example invalid_phone_number.' }),
  attr: Type.String({ description: 'Dot path to the offending input, zero-based indexes, for example customers.0.landline.' }),
});

export const ValidationErrorBody = Type.Object({
  detail: Type.String(),
  code: Type.String({ description: 'account_failed_validation, import_supplier_not_found, …' }),
  errors: Type.Optional(Type.Array(FieldErrorItem)),
}, { additionalProperties: true });
export type ValidationErrorBody = Static<typeof ValidationErrorBody>;
