import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import { AppError, type FieldError } from '../../core/errors.ts';
import { conflictError, differences, type ComparedField } from '../../core/conflicts.ts';
import { dayNumber } from '../../core/dates.ts';
import { lockImportedAccount, type ImportDeps } from '../imported-accounts/index.ts';
import type { Caller } from '../../core/caller.ts';
import { insertNotes } from '../notes/index.ts';
import { decimalString, moneyString } from '../../schemas/money.ts';
import type { CreateTransactionsBody, CreateTransactionsResponse, TransactionData, TransactionItem } from './transactions.schemas.ts';
import {
  MAX_BALANCE, readUnderAccountLock, transactionsInsert, type NewTransactionValues,
  type TransactionRow,
} from './transactions.repository.ts';

export interface ImportOptions { checkPreviouslyAdded: boolean; forceAddToCurrentStatement: boolean }

/** Transaction ids listed in the pinned note of a forced batch; the rest are counted. */
const NOTE_LISTS_AT_MOST = 20;

/**
 * Imports a batch of transactions onto an account (spec 4.5, D8): all or nothing, in one database
 * transaction that holds the account row, so concurrent identical batches add each transaction once.
 * A transaction_id found on the account is TRANSACTION_ALREADY_EXISTS only when everything sent is what
 * was stored; otherwise the batch is a 400 `conflict` naming each differing field.
 */
async function importTransactions(
  { db, events, clock }: ImportDeps, caller: Caller, body: CreateTransactionsBody, options: ImportOptions,
): Promise<CreateTransactionsResponse> {
  const supplier = await requireCallerSupplier(caller, body.import_supplier, 'import_supplier');
  return db.transaction().execute(async (trx) => {
    const account = await lockImportedAccount(trx, supplier.id, body.external_account_number);
    const ids = options.checkPreviouslyAdded ? body.transactions.map((item) => item.transaction_id) : [];
    // The balance bound's verdict comes with the read: it sums the batch's items that are not found.
    const batch = body.transactions.map((item) => ({ transaction_id: item.transaction_id, amount: decimalString(item.amount), type: item.type }));
    const { periodStart, existing: found, overflow } = await readUnderAccountLock(trx, account.id, ids, batch);
    const existing = new Map(found.map((row) => [row.transaction_id, row]));
    // Only an exact repeat is already existing; one sent again with other content is refused whole.
    const conflicts = body.transactions.flatMap((item, index) => {
      const before = existing.get(item.transaction_id);
      return before ? transactionDifferences(before, item, index) : [];
    });
    if (conflicts.length > 0) throw conflictError(conflicts);

    const rows: NewTransactionValues[] = [];
    const moved: Array<{ id: string; from: string }> = [];
    body.transactions.forEach((item, index) => {
      if (existing.has(item.transaction_id)) return;
      let description: string | null = null;
      let date = item.transaction_date;
      if (periodStart !== null && dayNumber(date) < dayNumber(periodStart)) {
        if (!options.forceAddToCurrentStatement) {
          throw importError(
            `Transaction "${item.transaction_id}" is dated ${date}, before the open statement period, which starts ${periodStart}.`,
            `transactions.${index}.transaction_date`, item,
          );
        }
        description = `Dated ${date}, before the open statement period; moved to its first day, ${periodStart}.`;
        moved.push({ id: item.transaction_id, from: date });
        date = periodStart;
      }
      rows.push(toRow(item, date, description));
    });

    // An account accumulates at most ±MAX_BALANCE (issue #14): past it, its balance would not fit
    // what clients and reports hold, so the batch is refused whole at the item that crosses.
    if (overflow) {
      const id = overflow.transactionId;
      const detail = `Transaction "${id}" would take the account's balance to ${overflow.balance}; an account's balance must stay within -${MAX_BALANCE} and ${MAX_BALANCE}.`;
      throw AppError.field('account_balance_out_of_range', detail, `transactions.${body.transactions.findIndex((item) => item.transaction_id === id)}.amount`);
    }

    // The batch's event is written with its insert; a batch refused below rolls both back.
    const inserted = await events.record(trx, [{
      supplierId: supplier.id, type: 'post_import.completed', externalAccountNumber: body.external_account_number,
      data: { kind: 'transactions', added: rows.length, already_existing: body.transactions.length - rows.length },
    }], rows.length > 0 ? transactionsInsert(account.id, rows) : null);
    const added = new Set(inserted.map((row) => row.transaction_id));
    if (added.size < rows.length) {
      const index = body.transactions.findIndex((item) => !existing.has(item.transaction_id) && !added.has(item.transaction_id));
      const item = body.transactions[index]!;
      throw importError(`Transaction "${item.transaction_id}" was added to this account before.`, `transactions.${index}.transaction_id`, item);
    }
    if (moved.length > 0 && periodStart !== null) {
      await insertNotes(trx, account.id, [{
        body: movedNoteBody(moved, periodStart), documentPaths: [], createdAt: clock.now(), isPinned: true, unpinAt: null,
      }]);
    }
    // An added transaction is answered from the values written, not read back.
    const written = new Map(rows.map((row) => [row.transaction_id, row]));
    return {
      results: body.transactions.map((item) => {
        const before = existing.get(item.transaction_id);
        return before
          ? { status: 'TRANSACTION_ALREADY_EXISTS' as const, transaction_data: toData(before) }
          : { status: 'TRANSACTION_ADDED_TO_ACCOUNT' as const, transaction_data: { ...toData(written.get(item.transaction_id)!), status: 'TRANSACTION_IMPORT_SUCCESS' as const } };
      }),
    };
  });
}

/** A batch's transactions as stored, each on the date it was sent (nothing moved into an open period). */
export function transactionRows(items: TransactionItem[]): NewTransactionValues[] {
  return items.map((item) => toRow(item, item.transaction_date, null));
}

function toRow(item: TransactionItem, date: string, description: string | null): NewTransactionValues {
  return {
    transaction_id: item.transaction_id,
    transaction_date: date,
    original_date: description ? item.transaction_date : null,
    amount: moneyString(item.amount),
    type: item.type,
    reason: 'reason' in item ? item.reason : null,
    display_note: item.display_note ?? null,
    note: item.note ?? null,
    reference: 'reference' in item ? item.reference ?? null : null,
    payment_type: 'payment_type' in item ? item.payment_type ?? null : null,
    product_code: 'product_code' in item ? item.product_code ?? null : null,
    line_items: 'line_items' in item && item.line_items ? item.line_items : null,
    tax_items: 'tax_items' in item && item.tax_items ? item.tax_items : null,
    description,
  };
}

/** The fields of a transaction as the client sent them, besides its date and amount. */
const COMPARED_FIELDS = ['type', 'reason', 'display_note', 'note', 'reference', 'payment_type', 'product_code', 'line_items', 'tax_items'] as const;

function transactionDifferences(row: TransactionRow, item: TransactionItem, index: number): FieldError[] {
  const sent = toRow(item, item.transaction_date, null);
  return differences(`Transaction "${item.transaction_id}"`, `transactions.${index}`, [
    // A transaction moved into the open statement period keeps the date it was sent with.
    { name: 'transaction_date', stored: row.original_date ?? row.transaction_date, sent: sent.transaction_date },
    { name: 'amount', stored: row.amount, sent: sent.amount, as: 'money' },
    ...COMPARED_FIELDS.map((name): ComparedField => ({ name, stored: row[name], sent: sent[name], as: name.endsWith('_items') ? 'json' : 'value' })),
  ]);
}

/** A transaction as answered, stored or just written: optional fields left out when empty (spec 2.1). */
export function toData(row: TransactionRow | NewTransactionValues): TransactionData {
  const data: Record<string, unknown> = {
    transaction_id: row.transaction_id,
    transaction_date: row.transaction_date,
    amount: row.amount,
    type: row.type,
  };
  for (const key of ['original_date', 'reason', 'display_note', 'note', 'reference', 'payment_type', 'product_code',
    'line_items', 'tax_items', 'description'] as const) {
    if (row[key] !== null) data[key] = row[key];
  }
  return data as TransactionData;
}

function importError(detail: string, attr: string, item: TransactionItem): AppError {
  return AppError.field('TRANSACTION_IMPORT_ERROR', detail, attr, {
    status: 'TRANSACTION_IMPORT_ERROR',
    error_detail: detail,
    transaction_data: { ...item, amount: moneyString(item.amount) },
  });
}

// One pinned note per forced batch, naming what moved, so support staff see why dates differ.
function movedNoteBody(moved: Array<{ id: string; from: string }>, periodStart: string): string {
  const listed = moved.slice(0, NOTE_LISTS_AT_MOST).map((m) => `${m.id} (${m.from})`).join(', ');
  const more = moved.length > NOTE_LISTS_AT_MOST ? ` and ${moved.length - NOTE_LISTS_AT_MOST} more` : '';
  return `Imported transactions dated before the open statement period were moved to its first day, ${periodStart}: ${listed}${more}.`;
}

/** The transactions module as the composition root builds it (composition.ts). */
export interface Transactions {
  /** POST transactions/create/ with its options: the batch added whole, or refused whole. */
  import(caller: Caller, body: CreateTransactionsBody, options: ImportOptions): Promise<CreateTransactionsResponse>;
  /** The same module over another handle of the store (a rehearsal's). */
  on(db: Kysely<Database>): Transactions;
}

export function createTransactions(deps: ImportDeps): Transactions {
  return { import: (caller, body, options) => importTransactions(deps, caller, body, options), on: (db) => createTransactions({ ...deps, db }) };
}
