import { Type, type Static } from '@sinclair/typebox';

// The error body of spec 7.1 / D4, for the OpenAPI document of every route. Some answers add
// top-level fields (D6's already-imported create, spec 4.5's TRANSACTION_IMPORT_ERROR).
export const FieldErrorItem = Type.Object({
  detail: Type.String({ description: 'Human-readable; wording may change.' }),
  code: Type.String({ description: 'Stable machine-readable code, for example invalid_phone_number.' }),
  attr: Type.String({ description: 'Dot path to the offending input, zero-based indexes, for example customers.0.landline.' }),
});

export const ErrorBody = Type.Object({
  detail: Type.String(),
  code: Type.String({ description: 'Stable reason code (docs/validation.md lists them).' }),
  errors: Type.Optional(Type.Array(FieldErrorItem)),
}, { additionalProperties: true });
export type ErrorBody = Static<typeof ErrorBody>;
