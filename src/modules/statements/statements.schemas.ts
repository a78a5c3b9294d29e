import { Type, type Static } from '@sinclair/typebox';
import { registerRules } from '../../http/validation.ts';
import { DocumentPath } from '../account-data/note.schemas.ts';
import { ExternalAccountNumber, ImportSupplierCode } from '../accounts/common.schemas.ts';
import { MAX_AMOUNT } from '../transactions/transactions.schemas.ts';

// Historical statements (spec 2.6, 4.6, D8): PDFs already issued by the supplier. Each one closes a
// statement period of the account: transactions go after the latest one's bill_period_to_date.

export const MAX_STATEMENTS_PER_REQUEST = 500;
const DateString = Type.String({ format: 'date', maxLength: 10 });

export const StatementItem = Type.Object({
  bill_period_from_date: DateString,
  bill_period_to_date: Type.String({ format: 'date', maxLength: 10, description: 'Not before bill_period_from_date (`invalid_date_range`)' }),
  statement_id: Type.String({ minLength: 1, maxLength: 100, description: 'Unique per account; a repeat with the same data changes nothing' }),
  issued_date: DateString,
  number: Type.String({ minLength: 1, maxLength: 100 }),
  gross_amount: Type.Number({ minimum: -MAX_AMOUNT, maximum: MAX_AMOUNT, 'x-decimal-places': 2, description: 'At most two decimals' }),
  statement_path: Type.Optional(DocumentPath),
}, { additionalProperties: false, 'x-rules': 'statements.period' });
export type StatementItem = Static<typeof StatementItem>;

export const CreateStatementsBody = Type.Object({
  import_supplier: ImportSupplierCode,
  external_account_number: ExternalAccountNumber,
  statements: Type.Array(StatementItem, { minItems: 1, maxItems: MAX_STATEMENTS_PER_REQUEST }),
}, { additionalProperties: false, 'x-rules': 'statements.batch' });
export type CreateStatementsBody = Static<typeof CreateStatementsBody>;

registerRules('statements.period', (value) => {
  const item = value as { bill_period_from_date?: unknown; bill_period_to_date?: unknown };
  if (typeof item?.bill_period_from_date === 'string' && typeof item.bill_period_to_date === 'string'
    && item.bill_period_to_date < item.bill_period_from_date) {
    return [{ path: 'bill_period_to_date', code: 'invalid_date_range', detail: 'bill_period_to_date must not be before bill_period_from_date.' }];
  }
  return [];
});

registerRules('statements.batch', (value) => {
  const items = (value as { statements?: unknown })?.statements;
  if (!Array.isArray(items)) return [];
  const seen = new Set<string>();
  const found: Array<{ path: string; code: string; detail: string }> = [];
  items.forEach((item, index) => {
    const id = (item as { statement_id?: unknown })?.statement_id;
    if (typeof id !== 'string') return;
    if (seen.has(id)) found.push({ path: `statements.${index}.statement_id`, code: 'duplicate', detail: 'This statement_id appears earlier in the request.' });
    seen.add(id);
  });
  return found;
});
