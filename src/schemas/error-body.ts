import { Type, type Static } from '@sinclair/typebox';

// The error body of every answer but a success (spec 7.1, D4), for the OpenAPI document of every
// route. Some answers add top-level fields (an already-imported create, a failed transactions batch).
export const FieldErrorItem = Type.Object({
  detail: Type.String({ description: 'For people; the wording may change.' }),
  code: Type.String({ description: 'Stable and machine-readable, for example invalid_phone_number.' }),
  attr: Type.String({ description: 'Dot path of the offending input, zero-based indexes, for example customers.0.landline; non_field_errors for the whole body.' }),
}, { $id: 'FieldError', description: 'One problem with one field of the request.' });

export const ErrorBody = Type.Object({
  detail: Type.String({ description: 'For people; the wording may change.' }),
  code: Type.String({ description: 'Stable and machine-readable reason, for example account_failed_validation.' }),
  errors: Type.Optional(Type.Array(FieldErrorItem, { description: 'The field problems, in the order of the fields in the request.' })),
}, { $id: 'ErrorBody', additionalProperties: true, description: 'Why a request was refused. Some answers add fields of their own, listed on the operation.' });
export type ErrorBody = Static<typeof ErrorBody>;
