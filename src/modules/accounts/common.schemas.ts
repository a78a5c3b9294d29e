import { Type, type TSchema } from '@sinclair/typebox';

// Pieces shared by the bodies and answers of the imports onto an account (notes, transactions,
// statements) and the account read endpoint.

export const ImportSupplierCode = Type.String({ minLength: 1, maxLength: 100, description: 'Import supplier code' });
export const ExternalAccountNumber = Type.String({ minLength: 1, maxLength: 100, description: "The supplier's own account number" });

/** Nullable as `type: [T, 'null']` (validation.ts: never anyOf). */
export function Nullable<T extends TSchema>(schema: T) {
  const { type } = schema as unknown as { type: string };
  return Type.Unsafe<T['static'] | null>({ ...schema, type: [type, 'null'] });
}

/** Error bodies (spec 7, D4). Open to more top-level fields, so the serializer drops none of them. */
export const ErrorResponse = Type.Object({
  detail: Type.String(),
  code: Type.String(),
  errors: Type.Optional(Type.Array(Type.Object({ detail: Type.String(), code: Type.String(), attr: Type.String() }))),
}, { additionalProperties: true });

/** UTC with whole seconds, 'YYYY-MM-DDTHH:MM:SSZ' (spec 2.1). */
export function utcSeconds(value: Date): string {
  return `${value.toISOString().slice(0, 19)}Z`;
}
