import { Type, type TUnsafe } from '@sinclair/typebox';

/**
 * A closed set from one `as const` array (`invalid_choice`). A plain `enum`, not a union of
 * literals, so a wrong value is one error rather than one per literal.
 */
export const Choice = <T extends readonly string[]>(values: T, description?: string): TUnsafe<T[number]> =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

/** The same, or null: `type: ['string', 'null']` with null among the values. */
export const NullableChoice = <T extends readonly string[]>(values: T, description?: string): TUnsafe<T[number] | null> =>
  Type.Unsafe<T[number] | null>({ type: ['string', 'null'], enum: [...values, null], ...(description ? { description } : {}) });
