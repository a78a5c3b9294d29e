import type { Insertable, Kysely } from 'kysely';
import type { Database, StatementsTable } from '../../db/schema.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import { AppError, type FieldError } from '../../core/errors.ts';
import { conflictError, differences } from '../../core/conflicts.ts';
import { dayNumber } from '../../core/dates.ts';
import { lockImportedAccount, type ImportDeps } from '../imported-accounts/index.ts';
import type { Caller } from '../../core/caller.ts';
import { decimalString } from '../../schemas/money.ts';
import type { CreateStatementsBody, StatementItem } from './statements.schemas.ts';
import { findStatements, statementsInsert, type StatementRow } from './statements.repository.ts';

interface Period { id: string; from: string; to: string }

/**
 * Imports historical statements (spec 4.6, D8), all or nothing, holding the account row. A
 * statement_id already on the account with the same data changes nothing (idempotent re-post); with
 * other data it is refused (400 `conflict`, an item at each differing field): statements are issued
 * documents and are not edited through an import. A new statement's period must not overlap any other of the
 * account, stored or in the same request (`statement_period_overlap` at its bill_period_from_date).
 * Answers the validated data.
 */
async function importStatements({ db, events }: ImportDeps, caller: Caller, body: CreateStatementsBody): Promise<CreateStatementsBody> {
  const supplier = await requireCallerSupplier(caller, body.import_supplier, 'import_supplier');
  await db.transaction().execute(async (trx) => {
    const account = await lockImportedAccount(trx, supplier.id, body.external_account_number);
    const stored = await findStatements(trx, account.id);
    const { errors, fresh } = checkStatements(stored, body.statements);
    if (errors.some((e) => e.code === 'conflict')) throw conflictError(errors);
    if (errors.length > 0) throw new AppError('statement_period_overlap', errors[0]!.detail, { errors });
    await events.record(trx, [{
      supplierId: supplier.id, type: 'post_import.completed', externalAccountNumber: body.external_account_number,
      data: { kind: 'statements', added: fresh.length, already_existing: body.statements.length - fresh.length },
    }], fresh.length === 0 ? null : statementsInsert(trx, statementRows(account.id, fresh)));
  });
  return body;
}

/**
 * The rules of a statements import over what the account holds: a statement_id already stored must
 * repeat it exactly (`conflict` items otherwise), and a new statement's period must not overlap any
 * other, stored or earlier in `items` (`statement_period_overlap`). Answers the errors and the new
 * statements, in order. Pure: the import runs it under the account's lock, and a migration job's set
 * of new accounts runs it over nothing stored.
 */
export function checkStatements(stored: StatementRow[], items: StatementItem[]): { errors: FieldError[]; fresh: StatementItem[] } {
  const byId = new Map(stored.map((row) => [row.statement_id, row]));
  const periods: Period[] = stored.map((row) => ({ id: row.statement_id, from: row.bill_period_from_date, to: row.bill_period_to_date }));
  const errors: FieldError[] = [];
  const fresh: StatementItem[] = [];
  items.forEach((item, index) => {
    const known = byId.get(item.statement_id);
    if (known) {
      errors.push(...statementDifferences(known, item, index));
      return;
    }
    const [from, to] = [dayNumber(item.bill_period_from_date), dayNumber(item.bill_period_to_date)];
    const clash = periods.find((p) => dayNumber(p.from) <= to && from <= dayNumber(p.to));
    if (clash) {
      errors.push({
        code: 'statement_period_overlap', attr: `statements.${index}.bill_period_from_date`,
        detail: `The period ${item.bill_period_from_date} to ${item.bill_period_to_date} overlaps statement "${clash.id}" (${clash.from} to ${clash.to}).`,
      });
    }
    periods.push({ id: item.statement_id, from: item.bill_period_from_date, to: item.bill_period_to_date });
    fresh.push(item);
  });
  return { errors, fresh };
}

/** The rows of an account's new statements, as stored. */
export function statementRows(accountId: number, items: StatementItem[]): Insertable<StatementsTable>[] {
  return items.map((item) => ({
    account_id: accountId,
    statement_id: item.statement_id,
    bill_period_from_date: item.bill_period_from_date,
    bill_period_to_date: item.bill_period_to_date,
    issued_date: item.issued_date,
    number: item.number,
    gross_amount: decimalString(item.gross_amount),
    statement_path: item.statement_path ?? null,
  }));
}

function statementDifferences(row: StatementRow, item: StatementItem, index: number): FieldError[] {
  return differences(`Statement "${item.statement_id}"`, `statements.${index}`, [
    { name: 'bill_period_from_date', stored: row.bill_period_from_date, sent: item.bill_period_from_date },
    { name: 'bill_period_to_date', stored: row.bill_period_to_date, sent: item.bill_period_to_date },
    { name: 'issued_date', stored: row.issued_date, sent: item.issued_date },
    { name: 'number', stored: row.number, sent: item.number },
    { name: 'gross_amount', stored: row.gross_amount, sent: decimalString(item.gross_amount), as: 'money' },
    { name: 'statement_path', stored: row.statement_path, sent: item.statement_path },
  ]);
}

/** The statements module as the composition root builds it (composition.ts). */
export interface Statements {
  /** POST statements/create/: the historical statements that are new added, all or none. */
  import(caller: Caller, body: CreateStatementsBody): Promise<CreateStatementsBody>;
  /** The same module over another handle of the store (a rehearsal's). */
  on(db: Kysely<Database>): Statements;
}

export function createStatements(deps: ImportDeps): Statements {
  return { import: (caller, body) => importStatements(deps, caller, body), on: (db) => createStatements({ ...deps, db }) };
}
