import { Type, type Static } from '@sinclair/typebox';
import { PATH_SAFE_PATTERN } from '../core/identifiers.ts';

// The codes that name a supplier and an account (D5): path-safe, because they appear in URL paths.

const PathSafeCode = (maxLength: number, description: string) =>
  Type.String({ minLength: 1, maxLength, pattern: PATH_SAFE_PATTERN, description });

export const ImportSupplierCode = PathSafeCode(64,
  'Import supplier code, case-sensitive: 1-64 characters, no surrounding white space, no "/", not "." or "..", no control or format characters.');

export const ExternalAccountNumber = PathSafeCode(100,
  'The supplier\'s own account number, case-sensitive: 1-100 characters, no surrounding white space, no "/", not "." or "..", no control or format characters.');

/** The path parameters of every route under a supplier. */
export const SupplierPathParams = Type.Object({
  import_supplier_code: ImportSupplierCode,
}, { additionalProperties: false });
export type SupplierPathParams = Static<typeof SupplierPathParams>;

/** The path parameters of every route under one account of a supplier. */
export const AccountPathParams = Type.Object({
  import_supplier_code: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
}, { additionalProperties: false });
export type AccountPathParams = Static<typeof AccountPathParams>;
