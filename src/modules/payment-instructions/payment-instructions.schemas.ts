import { Type, type Static } from '@sinclair/typebox';
import { ExternalAccountNumber, ImportSupplierCode } from '../account-data/common.schemas.ts';

// Wire shapes of POST /v1/data-import/payment-instruction/create/ (spec 2.7, 4.7; D8, D9).

/** Kinds of instruction. The spec shows CARD; the others are the usual ways an energy bill is paid. */
export const PAYMENT_INSTRUCTION_TYPES = ['CARD', 'DIRECT_DEBIT', 'BANK_TRANSFER'] as const;
export type PaymentInstructionType = (typeof PAYMENT_INSTRUCTION_TYPES)[number];

// No surrounding white space and no control characters: the reference goes into a vendor URL path.
const TEXT_PATTERN = '^[^\\s\\x00-\\x1f\\x7f](?:[^\\x00-\\x1f\\x7f]*[^\\s\\x00-\\x1f\\x7f])?$';

export const CreatePaymentInstructionBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  vendor: Type.String({ minLength: 1, maxLength: 64, description: 'Code of a payment vendor registered by the service team.' }),
  reference: Type.String({
    minLength: 1, maxLength: 255, pattern: TEXT_PATTERN,
    description: "The instruction's reference at the vendor (for a stripe vendor, a PaymentMethod id).",
  }),
  // A plain `enum` (not a union of literals) so a wrong value is one invalid_choice, not one per literal.
  type: Type.Unsafe<PaymentInstructionType>({
    type: 'string', enum: [...PAYMENT_INSTRUCTION_TYPES],
    description: `Kind of instruction: ${PAYMENT_INSTRUCTION_TYPES.join(', ')}.`,
  }),
}, { $id: 'PaymentInstruction', additionalProperties: false, description: 'How the account pays: an instruction held by a payment vendor, named by its reference there.' });
export type CreatePaymentInstructionBody = Static<typeof CreatePaymentInstructionBody>;

export const CreatePaymentInstructionReply = Type.Object({
  service_account_number: Type.String(),
  reference: Type.String(),
}, { $id: 'PaymentInstructionResult' });
export type CreatePaymentInstructionReply = Static<typeof CreatePaymentInstructionReply>;

