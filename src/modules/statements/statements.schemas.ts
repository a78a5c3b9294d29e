import { Type, type Static } from '@sinclair/typebox';
import { dateRangeRule, registerRules, uniqueItemsRule } from '../../core/validation.ts';
import { DocumentPath } from '../account-data/note.schemas.ts';
import { DateString, ExternalAccountNumber, ImportSupplierCode } from '../account-data/common.schemas.ts';
import { MAX_AMOUNT } from '../transactions/transactions.schemas.ts';

// Historical statements (spec 2.6, 4.6, D8): PDFs already issued by the supplier. Each one closes a
// statement period of the account: transactions go after the latest one's bill_period_to_date.

export const MAX_STATEMENTS_PER_REQUEST = 500;

export const StatementItem = Type.Object({
  bill_period_from_date: DateString,
  bill_period_to_date: Type.String({ ...DateString, description: `${DateString.description} Not before bill_period_from_date (\`invalid_date_range\`).` }),
  statement_id: Type.String({ minLength: 1, maxLength: 100, description: 'Unique per account; a repeat with the same data changes nothing' }),
  issued_date: DateString,
  number: Type.String({ minLength: 1, maxLength: 100 }),
  gross_amount: Type.Number({ minimum: -MAX_AMOUNT, maximum: MAX_AMOUNT, 'x-decimal-places': 2, description: 'At most two decimals' }),
  statement_path: Type.Optional(DocumentPath),
}, { $id: 'Statement', additionalProperties: false, 'x-rules': 'statements.period', description: 'A statement the supplier already issued, usually a PDF under its documents root.' });
export type StatementItem = Static<typeof StatementItem>;

export const CreateStatementsBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  statements: Type.Array(StatementItem, { minItems: 1, maxItems: MAX_STATEMENTS_PER_REQUEST }),
}, { $id: 'ImportStatementsRequest', additionalProperties: false, 'x-rules': 'statements.batch' });
export type CreateStatementsBody = Static<typeof CreateStatementsBody>;

registerRules('statements.period', dateRangeRule('bill_period_from_date', 'bill_period_to_date'));
registerRules('statements.batch', uniqueItemsRule('statements', 'statement_id'));
