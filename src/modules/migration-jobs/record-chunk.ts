import { setImmediate as nextTurn } from 'node:timers/promises';
import { AppError } from '../../core/errors.ts';
import { retryableStoreFailure } from '../../db/errors.ts';
import { validateAccountData, type AccountData, type Note } from '../account-data/index.ts';
import {
  findRegisteredIdentifiers, findStagedNumbers, supplyPointsOf, type NewAccount,
} from '../account-imports/index.ts';
import { matchNotes, notesAsCreated, notesInsertMany, CreateNotesBody } from '../notes/index.ts';
import { checkStatements, statementRows, statementsInsert, CreateStatementsBody } from '../statements/index.ts';
import { MAX_BALANCE, transactionRows, transactionsInsertMany, CreateTransactionsBody } from '../transactions/index.ts';
import type { NewEvent } from '../events/index.ts';
import { finishSucceeded, type RecordRow, type WorkerJobRow } from './migration-jobs.repository.ts';
import { validatorFor, type PipelineDeps } from './record-pipeline.ts';

// A chunk of a job's records, set-based (the fast path of a migration job). Most records of a book
// are new accounts whose data passes every rule: for those, what each step would write is known
// before anything is written, so the chunk's rows are written table by table, in one statement per
// table for the whole chunk, in ONE transaction with their events and the records' outcomes:
//
// 1. Decide, in memory: each record is checked with the endpoints' own code (the account data's
//    validation, each history body's schema, the statements' rules, the notes' matching). A record
//    that any check refuses, or that the set cannot hold as it is (a payment instruction, which asks
//    a vendor; transactions that a statement would move or that could reach the balance bound), is
//    left to the record-at-a-time pipeline, which gives it its verdict: the set path never decides a
//    failure, so no rule has a second implementation.
// 2. Read, in sets: which accounts are staged already (a re-run, or staged by anything else) and
//    which electricity identifiers are on an account already: those records, too, go one at a time.
// 3. Write, in one transaction: the first stages, the accounts (by the create's own writer), the
//    attempts, statements, transactions and notes, every event, and the records succeeded. Anything
//    the database refuses (an account staged meanwhile, an identifier taken meanwhile, a slot not
//    free) or that fails unexpectedly rolls the whole chunk back, and its records go one at a time.
//
// A pre-flight stops after step 2: what passed is what the real run writes, so nothing is written.

/** A record the set path can write: its parts as the endpoints' bodies take them, already checked. */
interface Planned {
  row: RecordRow;
  account: AccountData;
  statements: CreateStatementsBody['statements'];
  transactions: CreateTransactionsBody['transactions'];
  notes: Note[];
}

/** The chunk's outcome: the records it finished (succeeded) and those left to run one at a time. */
export interface ChunkResult { succeeded: RecordRow[]; rest: RecordRow[] }

export async function runChunk(deps: PipelineDeps, job: WorkerJobRow, rows: RecordRow[]): Promise<ChunkResult> {
  const rest: RecordRow[] = [];
  // The supplier must be open; otherwise every record fails, one at a time. The team is the job's
  // (read with the claim: a job's team exists, the job row refers to it).
  if (job.supplier.status !== 'ongoing') return { succeeded: [], rest: rows };
  const teamId = job.operations_team_id;
  let planned: Planned[] = [];
  for (const row of rows) {
    // Each record's checks take a fraction of a millisecond, a chunk's tens: the event loop is given
    // back between records, so the requests this process serves (any tenant's) wait for one record's
    // checks, not for the chunks of every worker in turn.
    await nextTurn();
    const plan = planOf(job, row);
    if (plan) planned.push(plan);
    else rest.push(row);
  }
  planned = await withoutKnownConflicts(deps, job, planned, rest);
  if (planned.length === 0) return { succeeded: [], rest };
  if (job.dry_run) return { succeeded: planned.map((p) => p.row), rest };
  try {
    await writeChunk(deps, job, teamId, planned);
    return { succeeded: planned.map((p) => p.row), rest };
  } catch (error) {
    // Rolled back whole: each record runs on its own, and gets there the verdict the database gives it.
    if (!retryableStoreFailure(error) && !(error instanceof AppError)) {
      deps.log.warn({ err: error, job_id: job.id, lines: planned.map((p) => p.row.line) }, 'a migration chunk was rolled back; its records run one at a time');
    }
    return { succeeded: [], rest: [...rest, ...planned.map((p) => p.row)].sort((a, b) => a.line - b.line) };
  }
}

/** The record's parts when the set can write it as it is; undefined when it must run one step at a time. */
function planOf(job: WorkerJobRow, row: RecordRow): Planned | undefined {
  const record = row.record as Record<string, unknown>;
  const account = record.account as AccountData | undefined;
  if (!account || typeof account !== 'object' || account.import_supplier !== job.supplier_code) return undefined;
  if (validateAccountData(account)) return undefined;
  if (record.payment_instruction !== undefined && record.payment_instruction !== null) return undefined;
  const base = { import_supplier: job.supplier_code, external_account_number: account.external_account_number };
  const statements = listOf(record.statements, (items) => validatorFor(CreateStatementsBody)({ ...base, statements: items }));
  const transactions = listOf(record.transactions, (items) => validatorFor(CreateTransactionsBody)({ ...base, transactions: items }));
  const notes = listOf(record.notes, (items) => validatorFor(CreateNotesBody)({ ...base, notes: items }));
  if (!statements || !transactions || !notes) return undefined;
  const typed = {
    statements: statements as CreateStatementsBody['statements'],
    transactions: transactions as CreateTransactionsBody['transactions'],
  };
  if (checkStatements([], typed.statements).errors.length > 0) return undefined;
  if (!transactionsFitAsSent(typed.statements, typed.transactions)) return undefined;
  return { row, account, ...typed, notes: notes as Note[] };
}

/** The record's list of a kind ([] when absent), or undefined when its endpoint's schema refuses it. */
function listOf(value: unknown, invalid: (items: unknown[]) => unknown): unknown[] | undefined {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return undefined;
  if (value.length === 0) return [];
  return invalid(value) ? undefined : value;
}

/**
 * Whether a new account takes these transactions exactly as sent: no transaction_id twice, none
 * dated on or before the end of one of its statements (the import would move it into the open
 * period), and the balance bound out of reach (the sum of every amount, whichever way it moves the
 * balance, within it). Otherwise the record runs one step at a time, where the transactions import
 * decides.
 */
function transactionsFitAsSent(statements: CreateStatementsBody['statements'], transactions: CreateTransactionsBody['transactions']): boolean {
  if (new Set(transactions.map((t) => t.transaction_id)).size !== transactions.length) return false;
  const lastBilled = statements.reduce((last, s) => (s.bill_period_to_date > last ? s.bill_period_to_date : last), '');
  if (lastBilled !== '' && transactions.some((t) => t.transaction_date <= lastBilled)) return false;
  // Summed in floats, so with a wide margin: a sum anywhere near the bound goes to the exact import.
  let reach = 0;
  for (const t of transactions) reach += Math.abs(Number(t.amount));
  return reach < Number(MAX_BALANCE) / 2;
}

/** The planned records whose account is not staged and whose electricity identifiers are free; the others join `rest`. */
async function withoutKnownConflicts(deps: PipelineDeps, job: WorkerJobRow, planned: Planned[], rest: RecordRow[]): Promise<Planned[]> {
  if (planned.length === 0) return planned;
  const staged = await findStagedNumbers(deps.db, job.supplier_id, planned.map((p) => p.account.external_account_number));
  const identifiers = (p: Planned) => supplyPointsOf(p.account).flatMap((ref) => (ref.point.supply_type === 'ELECTRICITY' ? [ref.point.identifier] : []));
  const registered = await findRegisteredIdentifiers(deps.db, planned.flatMap(identifiers));
  const kept: Planned[] = [];
  for (const p of planned) {
    if (staged.has(p.account.external_account_number) || identifiers(p).some((id) => registered.has(id))) rest.push(p.row);
    else kept.push(p);
  }
  rest.sort((a, b) => a.line - b.line);
  return kept;
}

/** The chunk's rows, table by table, its events and its records' outcomes, in one transaction. */
async function writeChunk(deps: PipelineDeps, job: WorkerJobRow, teamId: number, planned: Planned[]): Promise<void> {
  // In account order, as the staging writer sorts, so two chunks sharing an account lock it in the same order.
  const sorted = [...planned].sort((a, b) => (a.account.external_account_number < b.account.external_account_number ? -1 : 1));
  const now = new Date(Math.floor(deps.clock.nowMs() / 1000) * 1000);
  await deps.db.transaction().execute(async (trx) => {
    const accounts: NewAccount[] = sorted.map((p) => ({ externalAccountNumber: p.account.external_account_number, data: p.account }));
    const created = await deps.imports.createNewAccounts(trx, job.supplier, teamId, accounts);
    const accountIds = new Map(created.map((c) => [c.externalAccountNumber, c.accountId]));
    const event = (p: Planned, kind: 'statements' | 'transactions' | 'notes', added: number, sent: number): NewEvent => ({
      supplierId: job.supplier_id, type: 'post_import.completed', externalAccountNumber: p.account.external_account_number,
      data: { kind, added, already_existing: sent - added },
    });

    const withStatements = sorted.filter((p) => p.statements.length > 0);
    if (withStatements.length > 0) {
      await deps.events.record(trx, withStatements.map((p) => event(p, 'statements', p.statements.length, p.statements.length)),
        statementsInsert(trx, withStatements.flatMap((p) => statementRows(accountIds.get(p.account.external_account_number)!, p.statements))));
    }
    const withTransactions = sorted.filter((p) => p.transactions.length > 0);
    if (withTransactions.length > 0) {
      const rows = withTransactions.flatMap((p) => transactionRows(p.transactions)
        .map((row) => ({ account_id: accountIds.get(p.account.external_account_number)!, ...row })));
      const added = await deps.events.record(trx, withTransactions.map((p) => event(p, 'transactions', p.transactions.length, p.transactions.length)),
        transactionsInsertMany(rows));
      if (added.length !== rows.length) throw new Error('a new account already held one of its transactions');
    }
    const withNotes = sorted.filter((p) => p.notes.length > 0).map((p) => ({ p, fresh: matchNotes(notesAsCreated(p.account.notes ?? [], now), p.notes, now).fresh }));
    if (withNotes.length > 0) {
      const rows = withNotes.flatMap(({ p, fresh }) => fresh.map((note) => ({ ...note, accountId: accountIds.get(p.account.external_account_number)! })));
      await deps.events.record(trx, withNotes.map(({ p, fresh }) => event(p, 'notes', fresh.length, p.notes.length)),
        rows.length > 0 ? notesInsertMany(trx, rows) : null);
    }
    const lines = new Map(sorted.map((p) => [p.account.external_account_number, p.row.line]));
    await finishSucceeded(trx, job.id, created.map((c) => ({ line: lines.get(c.externalAccountNumber)!, serviceAccountNumber: c.serviceAccountNumber })));
  });
}
