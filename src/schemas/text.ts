import { Type, type TSchema, type TUnsafe } from '@sinclair/typebox';

// Text fields. Every string has a maxLength (D5); whether it may be empty is said by the name:
// `Text` may be empty, `RequiredText` may not (`blank`).

/** Free text that may be empty. */
export const Text = (maxLength: number, options: Record<string, unknown> = {}) =>
  Type.String({ maxLength, ...options });

/** Text that must not be empty (`blank`). */
export const RequiredText = (maxLength: number, options: Record<string, unknown> = {}) =>
  Type.String({ minLength: 1, maxLength, ...options });

/** `string | null`, as one `type: ['string', 'null']` so errors stay those of the string. */
export const NullableText = (maxLength: number, description?: string): TUnsafe<string | null> =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength, ...(description ? { description } : {}) });

/** Any schema made nullable as `type: [T, 'null']` (never anyOf: its errors would be doubled). */
export function Nullable<T extends TSchema>(schema: T, description?: string) {
  const { type } = schema as unknown as { type: string };
  return Type.Unsafe<T['static'] | null>({ ...schema, type: [type, 'null'], ...(description ? { description } : {}) });
}
