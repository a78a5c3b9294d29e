import { Type, type Static } from '@sinclair/typebox';
import { PATH_SAFE_PATTERN, VENDOR_REFERENCE_PATTERN } from '../core/identifiers.ts';

// The codes that name a supplier and an account (D5): path-safe, because they appear in URL paths.

const PathSafeCode = (maxLength: number, description: string) =>
  Type.String({ minLength: 1, maxLength, pattern: PATH_SAFE_PATTERN, description });

export const ImportSupplierCode = PathSafeCode(64,
  'Import supplier code, case-sensitive: 1-64 characters, no surrounding white space, no "/", not "." or "..", no control or format characters.');

export const ExternalAccountNumber = PathSafeCode(100,
  'The supplier\'s own account number, case-sensitive: 1-100 characters, no surrounding white space, no "/", not "." or "..", no control or format characters.');

/** A payment instruction's reference at its vendor: one segment of the vendor's URL path, whatever decodes it. */
export const VendorReference = Type.String({
  minLength: 1, maxLength: 255, pattern: VENDOR_REFERENCE_PATTERN,
  description: 'The instruction\'s reference at the vendor (for a stripe vendor, a PaymentMethod id): 1-255 letters, digits, "-", ".", "_" or "~", not only dots.',
});

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
