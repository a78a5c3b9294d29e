import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { dateRangeRule, ruleOf, uniqueItemsRule } from '../../core/rules.ts';
import { Choice } from '../../schemas/choice.ts';
import { DateString } from '../../schemas/dates.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import { ExternalAccountNumber, ImportSupplierCode } from '../../schemas/identifiers.ts';
import { PositiveAmount } from '../../schemas/money.ts';
import { RequiredText } from '../../schemas/text.ts';

// Financial transactions (spec 2.5, 4.5, D8). Each type takes its own fields and no others: a
// discriminated union on `type`, so a field of another type is an `unknown_field`.

export const TRANSACTION_TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;
/** The values seen in the spec; the project's bounded choice for the full set. */
export const TRANSACTION_REASONS = ['IMPORTED_CHARGE', 'IMPORTED_CREDIT', 'ACCOUNT_CHARGE_PAYMENT', 'FULL_CREDIT_REFUND', 'GENERAL_CREDIT'] as const;
export const PAYMENT_TYPES = ['DD_REGULAR_COLLECTION', 'DIRECT_CREDIT', 'DEBIT_CARD'] as const;
export const MAX_TRANSACTIONS_PER_BATCH = 1000;
export const TRANSACTION_RESULT_STATUSES = ['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ALREADY_EXISTS'] as const;

const TRANSACTION_RULES = {
  'line-item period': dateRangeRule('start_date', 'end_date'),
  // A transaction_id twice in one batch is a mistake in the batch, not a repeat of an earlier import.
  'unique transaction ids': uniqueItemsRule('transactions', 'transaction_id'),
};

const Quantity = Type.Number({ minimum: -1e12, maximum: 1e12 });

export const LineItem = Type.Object({
  rate_band: RequiredText(100),
  start_date: DateString,
  end_date: DateString,
  number_of_units: Quantity,
  net_amount: Quantity,
  price_per_unit: Quantity,
  units: Type.Optional(Type.Array(Quantity, { maxItems: 1000 })),
}, { $id: 'LineItem', additionalProperties: false, ...ruleOf(TRANSACTION_RULES, 'line-item period') });

export const TaxItem = Type.Object({
  amount: Quantity,
  tax_type: RequiredText(100),
  value_taxed: Quantity,
  rate: Quantity,
  unit_type: RequiredText(100),
}, { $id: 'TaxItem', additionalProperties: false });

const common = {
  transaction_id: RequiredText(100),
  transaction_date: DateString,
  amount: PositiveAmount,
  display_note: Type.Optional(RequiredText(2000)),
  note: Type.Optional(RequiredText(2000)),
};
const reasonEnum = Choice(TRANSACTION_REASONS);
const paymentTypeEnum = Choice(PAYMENT_TYPES);

const Charge = Type.Object({ ...common, type: Type.Literal('CHARGE'), reason: reasonEnum }, { $id: 'ChargeTransaction', additionalProperties: false });
const Credit = Type.Object({ ...common, type: Type.Literal('CREDIT'), reason: reasonEnum }, { $id: 'CreditTransaction', additionalProperties: false });
const paymentFields = { reason: reasonEnum, reference: Type.Optional(RequiredText(200)), payment_type: Type.Optional(paymentTypeEnum) };
const Payment = Type.Object({ ...common, type: Type.Literal('PAYMENT'), ...paymentFields }, { $id: 'PaymentTransaction', additionalProperties: false });
const Repayment = Type.Object({ ...common, type: Type.Literal('REPAYMENT'), ...paymentFields }, { $id: 'RepaymentTransaction', additionalProperties: false });
const SupplyCharge = Type.Object({
  ...common,
  type: Type.Literal('SUPPLY_CHARGE'),
  product_code: Type.Optional(RequiredText(100)),
  line_items: Type.Optional(Type.Array(LineItem, { maxItems: 500 })),
  tax_items: Type.Optional(Type.Array(TaxItem, { maxItems: 100 })),
}, { $id: 'SupplyChargeTransaction', additionalProperties: false });

type TransactionUnion = Static<typeof Charge> | Static<typeof Credit> | Static<typeof Payment> | Static<typeof Repayment> | Static<typeof SupplyCharge>;
/** One transaction: `oneOf` with a discriminator, so errors come from the branch its `type` names. */
export const TransactionItem = Type.Unsafe<TransactionUnion>({
  $id: 'Transaction',
  description: 'A financial transaction; `type` decides which fields it takes.',
  type: 'object',
  oneOf: [Charge, Credit, Payment, Repayment, SupplyCharge],
  discriminator: { propertyName: 'type' },
  required: ['type'],
});
export type TransactionItem = Static<typeof TransactionItem>;

export const CreateTransactionsBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  transactions: Type.Array(TransactionItem, { minItems: 1, maxItems: MAX_TRANSACTIONS_PER_BATCH }),
}, { $id: 'ImportTransactionsRequest', additionalProperties: false, ...ruleOf(TRANSACTION_RULES, 'unique transaction ids') });
export type CreateTransactionsBody = Static<typeof CreateTransactionsBody>;

export const CreateTransactionsQuery = Type.Object({
  check_previously_added: Type.Optional(Type.Boolean({ default: true, description: 'Look up each transaction_id first and skip those added before. Accepts true, false, True, False, TRUE, FALSE, 1 or 0.' })),
  force_add_to_current_statement: Type.Optional(Type.Boolean({ default: true, description: 'Move a transaction dated before the open statement period to its first day. Accepts true, false, True, False, TRUE, FALSE, 1 or 0.' })),
}, { additionalProperties: false });
export type CreateTransactionsQuery = Static<typeof CreateTransactionsQuery>;

const Optional = <T extends TSchema>(schema: T) => Type.Optional(schema);
/** A transaction as answered: amounts as strings with two decimals, dates as stored. */
export const TransactionData = Type.Object({
  transaction_id: Type.String(),
  transaction_date: Type.String({ format: 'date' }),
  original_date: Optional(Type.String({ format: 'date', description: 'The date sent, when the transaction was moved into the open statement period' })),
  amount: Type.String({ description: 'Two decimals, e.g. "12.30"' }),
  type: Choice(TRANSACTION_TYPES),
  reason: Optional(Type.String()),
  display_note: Optional(Type.String()),
  note: Optional(Type.String()),
  reference: Optional(Type.String()),
  payment_type: Optional(Type.String()),
  product_code: Optional(Type.String()),
  line_items: Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  tax_items: Optional(Type.Array(Type.Object({}, { additionalProperties: true }))),
  description: Optional(Type.String({ description: 'Why the transaction was moved' })),
  status: Optional(Type.Literal('TRANSACTION_IMPORT_SUCCESS')),
}, { $id: 'TransactionData' });
export type TransactionData = Static<typeof TransactionData>;

export const TransactionResult = Type.Object({
  status: Choice(TRANSACTION_RESULT_STATUSES),
  transaction_data: TransactionData,
}, { $id: 'TransactionResult' });
export type TransactionResult = Static<typeof TransactionResult>;

export const CreateTransactionsResponse = Type.Object({
  results: Type.Array(TransactionResult, { description: 'One result per posted transaction, in the order posted.' }),
}, { $id: 'ImportTransactionsResult' });
export type CreateTransactionsResponse = Static<typeof CreateTransactionsResponse>;

/** 400: a validation error (D4), or the TRANSACTION_IMPORT_ERROR of spec 4.5, which keeps the D4 shape too. */
export const TransactionImportError = Type.Object({
  ...ErrorBody.properties,
  status: Type.Optional(Type.Literal('TRANSACTION_IMPORT_ERROR')),
  error_detail: Type.Optional(Type.String({ description: 'Why the batch failed' })),
  transaction_data: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'The first failing transaction, amount as a string' })),
}, { $id: 'TransactionImportError', additionalProperties: true, description: 'Why a batch was refused: the error body, and for `TRANSACTION_IMPORT_ERROR` the failing transaction.' });
