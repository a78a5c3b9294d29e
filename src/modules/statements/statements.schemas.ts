import { Type, type Static } from '@sinclair/typebox';
import { dateRangeRule, ruleOf, uniqueItemsRule } from '../../core/rules.ts';
import { DateString, PastDate } from '../../schemas/dates.ts';
import { ExternalAccountNumber, ImportSupplierCode } from '../../schemas/identifiers.ts';
import { SignedAmount } from '../../schemas/money.ts';
import { RequiredText } from '../../schemas/text.ts';
import { DocumentPath } from '../account-data/index.ts';

// Historical statements (spec 2.6, 4.6, D8): PDFs already issued by the supplier. Each one closes a
// statement period of the account: transactions go after the latest one's bill_period_to_date. Being
// history, a statement was issued and its period had ended by today: a period ending in the future
// would move every later transaction forward to it (and past the date rule, after 2100-12-31).

export const MAX_STATEMENTS_PER_REQUEST = 500;

const STATEMENT_RULES = {
  'bill period': dateRangeRule('bill_period_from_date', 'bill_period_to_date'),
  'unique statement ids': uniqueItemsRule('statements', 'statement_id'),
};

export const StatementItem = Type.Object({
  bill_period_from_date: DateString,
  bill_period_to_date: Type.String({ ...PastDate, description: `${PastDate.description} Not before bill_period_from_date (\`invalid_date_range\`).` }),
  statement_id: RequiredText(100, { description: 'Unique per account; a repeat with the same data changes nothing, with other data it is 400 `conflict`' }),
  issued_date: PastDate,
  number: RequiredText(100),
  gross_amount: SignedAmount,
  statement_path: Type.Optional(DocumentPath),
}, { $id: 'Statement', additionalProperties: false, ...ruleOf(STATEMENT_RULES, 'bill period'), description: 'A statement the supplier already issued, usually a PDF under its documents root.' });
export type StatementItem = Static<typeof StatementItem>;

export const CreateStatementsBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  statements: Type.Array(StatementItem, { minItems: 1, maxItems: MAX_STATEMENTS_PER_REQUEST }),
}, { $id: 'ImportStatementsRequest', additionalProperties: false, ...ruleOf(STATEMENT_RULES, 'unique statement ids') });
export type CreateStatementsBody = Static<typeof CreateStatementsBody>;
