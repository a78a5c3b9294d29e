import { Type, type Static } from '@sinclair/typebox';
import { Choice } from '../../schemas/choice.ts';
import { ExternalAccountNumber, ImportSupplierCode, VendorReference } from '../../schemas/identifiers.ts';
import { RequiredText } from '../../schemas/text.ts';

// Wire shapes of POST /v1/data-import/payment-instruction/create/ (spec 2.7, 4.7; D8, D9).

/** Kinds of instruction. The spec shows CARD; the others are the usual ways an energy bill is paid. */
export const PAYMENT_INSTRUCTION_TYPES = ['CARD', 'DIRECT_DEBIT', 'BANK_TRANSFER'] as const;

export const CreatePaymentInstructionBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  vendor: RequiredText(64, { description: 'Code of a payment vendor registered by the service team.' }),
  // Sent to the vendor as one segment of a URL path, with the vendor's secret.
  reference: VendorReference,
  type: Choice(PAYMENT_INSTRUCTION_TYPES, `Kind of instruction: ${PAYMENT_INSTRUCTION_TYPES.join(', ')}.`),
}, { $id: 'PaymentInstruction', additionalProperties: false, description: 'How the account pays: an instruction held by a payment vendor, named by its reference there.' });
export type CreatePaymentInstructionBody = Static<typeof CreatePaymentInstructionBody>;

export const CreatePaymentInstructionReply = Type.Object({
  service_account_number: Type.String(),
  reference: Type.String(),
}, { $id: 'PaymentInstructionResult' });
export type CreatePaymentInstructionReply = Static<typeof CreatePaymentInstructionReply>;

