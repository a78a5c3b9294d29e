import { isDeepStrictEqual } from 'node:util';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Database, Supplier } from '../../db/schema.ts';
import { requireCallerSupplier, requireSupplierOpen } from '../../core/suppliers.ts';
import { AppError } from '../../core/errors.ts';
import { validationError } from '../../core/validation.ts';
import { validateAccountData, withNormalisedPostcodes, type AccountData } from '../account-data/index.ts';
import type { Caller } from '../../core/caller.ts';
import type { Clock } from '../../core/clock.ts';
import { queueEmails } from '../email/index.ts';
import type { JobQueue } from '../../queue/queue.ts';
import { welcomeEmail } from '../email/index.ts';
import type { Events, NewEvent } from '../events/index.ts';
import type { ProcessAccountBody, ProcessAccountResponse } from './account-imports.schemas.ts';
import * as imports from './account-imports.repository.ts';
import { newAccountNumber } from './account-number.ts';
import { accountTreeRows, supplyPointsOf } from './account-tree.builder.ts';
import { findRegisteredIdentifiers, insertAccountsWithTrees, type AccountWithTree } from './account-tree.repository.ts';
import * as errors from './import-errors.ts';

// Create (spec 4.3, D6): checks in the order of D4, then the whole account in ONE transaction.
//
// Inside the transaction the account's advisory lock is taken first and its state read again under
// it, so "check, then create" cannot race another create of the same account: of two at once, one
// builds the account and the other gets account_import_in_progress (or, if it starts after the first
// committed, account_already_imported). The unique accounts.account_import_id is the backstop.
// The concurrency slot is taken after the account checks, also inside the transaction, so it is
// released however the request ends (see import-locks.repository.ts).

type Db = Kysely<Database>;

export interface CreateAccountDeps {
  db: Db;
  processConcurrencyLimit: number;
  /** Where the welcome emails' delivery jobs go, written in the creating transaction. */
  queue: JobQueue;
  /** The process's events: the attempt's event is written with the attempt's record. */
  events: Events;
  /** The time an attempt started. */
  clock: Clock;
  /**
   * A write of the caller's that must commit with the account, or not at all: a migration job marks
   * its record as the one that created the account, so the mark survives a crash right after.
   */
  onCreated?: ((trx: Transaction<Database>, serviceAccountNumber: string) => Promise<void>) | undefined;
  /**
   * The data the caller's stage just stored (its StageResult's `stored`; a migration job's record):
   * the account is made from it or not at all. A create makes the account from the data staged when it runs, so a stage by
   * anything else in between (another request, another instance) would otherwise become the account
   * while the record reported its own data created: that is `account_staged_data_changed` instead.
   */
  stagedByCaller?: AccountData | undefined;
  /** Where new accounts' numbers are drawn: newAccountNumber, unless a test forces a collision with its own. */
  drawAccountNumber?: (() => string) | undefined;
}

const IDENTIFIER_KEY = 'supply_points_identifier_key';
const RETRY_AFTER_SECONDS = '2';

class DryRunRollback extends Error {}

export async function createAccount(deps: CreateAccountDeps, caller: Caller, body: ProcessAccountBody): Promise<ProcessAccountResponse> {
  const supplier = await requireCallerSupplier(caller, body.import_supplier_code, 'import_supplier_code');
  const startedAt = deps.clock.now();
  const dryRun = body.dry_run === true;
  const attempt = { supplierId: supplier.id, externalAccountNumber: body.external_account_number, dryRun, startedAt };
  try {
    requireSupplierOpen(supplier, 'import_supplier_code');
    // A successful create records its attempt inside its own transaction (one commit, not two).
    const number = await create(deps, supplier, body, attempt);
    return { service_account_number: number };
  } catch (error) {
    const appError = error instanceof AppError ? error : null;
    const first = appError?.errors?.[0];
    await record(deps, {
      ...attempt,
      outcome: appError?.code === 'dry_run_rolled_back' ? 'dry_run_rolled_back' : 'failed',
      errorCode: appError?.code ?? 'internal_error',
      errorDetail: appError?.detail ?? 'An unexpected error occurred.',
      errorAttr: first?.attr ?? null,
      errorFieldCode: first?.code ?? null,
    }, first?.attr ?? null);
    throw error;
  }
}

// The record of a failed (or dry) attempt is kept outside the create transaction, which rolled back,
// and its event is written with it, in one transaction of their own (D13). Losing them must not turn
// the answer into another error, so a failure to record is swallowed.
async function record({ db, events }: { db: Db; events: Events }, attempt: imports.AttemptRecord, attr: string | null): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await events.record(trx, [attemptEvent(attempt, attr)], imports.attemptInsert(trx, attempt));
  }).catch(() => {});
}

function attemptEvent(attempt: imports.AttemptRecord, attr: string | null): NewEvent {
  const base = { supplierId: attempt.supplierId, externalAccountNumber: attempt.externalAccountNumber };
  if (attempt.outcome === 'dry_run_rolled_back') return { ...base, type: 'import_process.dry_run_completed', data: {} };
  const error = { code: attempt.errorCode ?? 'internal_error', detail: attempt.errorDetail ?? '', attr };
  return attempt.dryRun
    ? { ...base, type: 'import_process.dry_run_failed', data: { error } }
    : { ...base, type: 'import_process.failed', data: { error } };
}

async function create(
  deps: CreateAccountDeps, supplier: Supplier, body: ProcessAccountBody, attempt: Omit<imports.AttemptRecord, 'outcome' | 'errorCode' | 'errorDetail'>,
): Promise<string> {
  const ext = body.external_account_number;
  let data: AccountData | undefined;
  try {
    if (atOnce(deps, supplier, body)) {
      const seen = await imports.findForCreateAtOnce(deps.db, supplier.id, ext, body.operations_team_name);
      // Anything in the way (or invalid): the transaction below answers it, in D4's order.
      if (seen && seen.account_id === null && !seen.skipped && seen.team_id !== null && !validateAccountData(seen.data)
        && stagedAsExpected(deps, seen.data)) {
        data = seen.data as AccountData;
        const number = (deps.drawAccountNumber ?? newAccountNumber)();
        const [made] = await insertAccountsWithTrees(deps.db, [accountWithTree(supplier, seen.team_id, seen.id, ext, data, number)],
          createdRecords(deps, attempt.startedAt), imports.createGate(seen.id, seen.version, deps.processConcurrencyLimit));
        if (made) return number;
      }
    }
    return await deps.db.transaction().execute(async (trx) => {
      // The import process, its account lock and, under the lock, the staged data, the team and a
      // concurrency slot, in one statement, checked in D4's order: not staged, imported or skipped,
      // another create holding the lock, the team, the slot.
      const state = await imports.findForCreate(trx, supplier.id, ext, body.operations_team_name, deps.processConcurrencyLimit);
      if (!state) throw errors.accountNotStaged(ext);
      // Linked by a create that committed after this read's snapshot: its account is not in it.
      if (state.service_account_number === null && state.account_id !== null) {
        throw errors.accountAlreadyImported(ext, await imports.findAccountNumber(trx, state.account_id));
      }
      errors.requireNotImportedOrSkipped(ext, state);
      if (!state.locked) throw errors.accountImportInProgress(ext);

      if (state.team_id === null) {
        throw AppError.field('operations_team_not_found', `No operations team named "${body.operations_team_name}".`, 'operations_team_name');
      }
      if (deps.processConcurrencyLimit > 0 && state.slot === null) throw concurrencyLimitExceeded(deps.processConcurrencyLimit);

      const invalid = validateAccountData(state.data);
      if (invalid) throw validationError('account_failed_validation', invalid);
      // An electricity identifier already on another account is found by the unique index when the
      // tree is written (below), not by a look beforehand: one round trip less for every create, and
      // the same answer, since nothing after that point can fail first.
      data = state.data as AccountData;
      if (!stagedAsExpected(deps, data)) {
        throw new AppError('account_staged_data_changed', `Account "${ext}" was staged again, with other data, by another request while `
          + 'this record was creating it; nothing was created. Run the record again (retry the job) once the other writer is done.');
      }

      // The created attempt and its event are written by the account's own statement (a dry run's
      // would be rolled back with it: it writes neither).
      const recordCreated = body.dry_run === true ? [] : createdRecords(deps, attempt.startedAt);
      const [{ number }] = await buildAccounts(trx, deps, supplier, state.team_id, [{ importId: state.id, ext, data }], recordCreated) as [BuiltAccount];
      if (body.dry_run === true) throw new DryRunRollback();
      await deps.onCreated?.(trx, number);
      return number;
    });
  } catch (error) {
    if (error instanceof DryRunRollback) {
      throw new AppError('dry_run_rolled_back',
        `Account "${ext}" would import successfully; it was rolled back due to the dry run.`);
    }
    // The unique index refused an identifier: name the point it was (the first registered one, in
    // document order).
    if (data && isUniqueViolation(error, IDENTIFIER_KEY)) throw await identifierTaken(deps.db, data);
    if (isUniqueViolation(error, 'accounts_account_import_id_key')) throw errors.accountImportInProgress(ext);
    throw error;
  }
}

/** Whether the staged data is what the caller's stage stored (compared as the store gives JSON back). */
function stagedAsExpected(deps: Pick<CreateAccountDeps, 'stagedByCaller'>, staged: unknown): boolean {
  if (deps.stagedByCaller === undefined) return true;
  return isDeepStrictEqual(staged, JSON.parse(JSON.stringify(deps.stagedByCaller)));
}

/**
 * Whether this create may first be tried without a transaction of its own: two statements, a read
 * and the account's (its tree, attempt and event, under the account lock and a concurrency slot taken
 * by the statement itself: createGate), where a transaction takes four (BEGIN, the read under the
 * lock, the account's, COMMIT). Not a dry run (it must roll back), nor when the create writes more
 * than that statement (welcome emails and their jobs, the caller's onCreated), nor on a handle that
 * is itself a transaction (a migration job's pre-flight, db/rehearsal.ts): there the statement does
 * not commit by itself, and one refused by the database (an identifier another account holds) would
 * end that whole transaction instead of being answered as the refusal it is. When the statement
 * writes nothing (something changed since the read, a lock or slot was taken, the drawn number was)
 * the create runs in its transaction, as if the try had not been made.
 */
function atOnce(deps: CreateAccountDeps, supplier: Supplier, body: ProcessAccountBody): boolean {
  return body.dry_run !== true && !supplier.customer_emails && deps.onCreated === undefined && !deps.db.isTransaction;
}

/** The created attempt and its `import_process.completed`, written by the statement that writes the account (`account_keys`). */
function createdRecords(deps: Pick<CreateAccountDeps, 'events'>, startedAt: Date): RawBuilder<unknown>[] {
  return [
    imports.createdAttemptsInsert('account_keys', startedAt),
    deps.events.insertPerRow('account_keys', { type: 'import_process.completed', data: imports.completedEventData }, 'acct'),
  ];
}

function concurrencyLimitExceeded(limit: number): AppError {
  return new AppError('concurrency_limit_exceeded', `More than ${limit} accounts are being created at once; retry shortly.`,
    { headers: { 'Retry-After': RETRY_AFTER_SECONDS } });
}

/** An account of a set created at once: never staged, its data valid (validateAccountData passed). */
export interface NewAccount { externalAccountNumber: string; data: AccountData }
export interface CreatedAccount { externalAccountNumber: string; accountId: number; serviceAccountNumber: string }

/** A set could not be created as one: one of its accounts was staged meanwhile, by anything. Nothing of it may stay. */
export class NewAccountsRaced extends Error {}

/**
 * Creates accounts never staged before, all in the caller's transaction (a migration job's set of new
 * accounts), with what a stage and a create of each would write: the first stage of each
 * (`import_process.staged`, first_staging), the account and its tree by the create's own writer
 * (buildAccounts, welcome emails included), and the created attempt with `import_process.completed`.
 * Each kind of row is written for the whole set in one statement, the accounts and their trees too
 * (and again for the few whose drawn number was taken).
 * The set takes one concurrency slot (concurrency_limit_exceeded when none is free). An account staged
 * by anything before this commits is NewAccountsRaced, and an electricity identifier another
 * account took meanwhile is the unique index's error: either way the caller rolls the whole set back
 * and runs each account on its own. `accounts` are sorted by the caller, and not empty.
 */
export async function createNewAccounts(
  trx: Transaction<Database>, deps: Pick<CreateAccountDeps, 'queue' | 'events' | 'clock' | 'processConcurrencyLimit' | 'drawAccountNumber'>,
  supplier: Supplier, teamId: number, accounts: readonly NewAccount[],
): Promise<CreatedAccount[]> {
  if (deps.processConcurrencyLimit > 0) {
    const slot = await imports.takeSlot(trx, deps.processConcurrencyLimit);
    if (slot === null) throw concurrencyLimitExceeded(deps.processConcurrencyLimit);
  }
  const startedAt = deps.clock.now();
  // Stored as a stage keeps it: GB postcodes in their normal form.
  const staged = accounts.map((a) => ({ ext: a.externalAccountNumber, data: withNormalisedPostcodes(a.data) }));
  const stagedRows = await deps.events.record(trx, staged.map(({ ext }) => ({
    supplierId: supplier.id, type: 'import_process.staged' as const, externalAccountNumber: ext, data: { first_staging: true },
  })), imports.insertFirstStages(staged.map(({ ext, data }) => ({ supplierId: supplier.id, externalAccountNumber: ext, dataJson: JSON.stringify(data) }))));
  if (stagedRows.length < staged.length) throw new NewAccountsRaced();
  const importIds = new Map(stagedRows.map((row) => [row.external_account_number, row.id]));
  // Each account's created attempt and `import_process.completed` are written by its own statement,
  // as a single create writes them.
  const built = await buildAccounts(trx, deps, supplier, teamId, staged.map(({ ext, data }) => ({ importId: importIds.get(ext)!, ext, data })),
    createdRecords(deps, startedAt));
  const created: CreatedAccount[] = built.map((made, i) => ({
    externalAccountNumber: staged[i]!.ext, accountId: made.id, serviceAccountNumber: made.number,
  }));
  return created;
}

/**
 * The error for a create the unique index refused: the first point, in document order, whose
 * electricity identifier is on another account. The conflicting row may since have been rolled back:
 * the first electricity point is still named.
 */
async function identifierTaken(db: Kysely<Database>, data: AccountData): Promise<AppError> {
  const electricity = supplyPointsOf(data).flatMap((ref) =>
    ref.point.supply_type === 'ELECTRICITY' ? [{ ...ref, identifier: ref.point.identifier }] : []);
  const registered = await findRegisteredIdentifiers(db, electricity.map((p) => p.identifier));
  const taken = electricity.find((p) => registered.has(p.identifier)) ?? electricity[0]!;
  return AppError.field('supply_point_already_registered',
    `Supply point identifier "${taken.identifier}" is already registered on another account.`,
    `supply_addresses.${taken.addressIndex}.supply_points.${taken.pointIndex}.identifier`);
}

interface BuiltAccount { id: number; number: string }

function accountWithTree(supplier: Supplier, teamId: number, importId: number, ext: string, data: AccountData, number: string): AccountWithTree {
  return {
    account: {
      number,
      account_import_id: importId,
      supplier_id: supplier.id,
      external_account_number: ext,
      operations_team_id: teamId,
      billing_street_address: data.billing_address.street_address,
      billing_locality: data.billing_address.locality ?? null,
      billing_administrative_area: data.billing_address.administrative_area ?? null,
      billing_country: data.billing_address.country,
      billing_postal_code: data.billing_address.postal_code,
      unknown_occupier: data.unknown_occupier ?? null,
      metadata: data.metadata ?? [],
    },
    rows: accountTreeRows(data),
  };
}

/** The number of tries an account's number is drawn before its create fails. */
const NUMBER_TRIES = 5;

/**
 * Writes new accounts with their trees (one statement for them all) and queues their welcome emails
 * (in one go), in the caller's transaction, with `also` (insertAccountsWithTrees: writes that belong
 * to each written account, in its statement); their ids, numbers and creation times, in the order given.
 * An account whose drawn number is taken already was not written: those few are written again, with
 * new numbers, by the same statement.
 */
async function buildAccounts(
  trx: Transaction<Database>, deps: Pick<CreateAccountDeps, 'queue' | 'drawAccountNumber'>, supplier: Supplier, teamId: number,
  inputs: ReadonlyArray<{ importId: number; ext: string; data: AccountData }>, also: readonly RawBuilder<unknown>[] = [],
): Promise<BuiltAccount[]> {
  const draw = deps.drawAccountNumber ?? newAccountNumber;
  const set = inputs.map(({ importId, ext, data }) => accountWithTree(supplier, teamId, importId, ext, data, ''));
  const built: Array<BuiltAccount | undefined> = new Array(inputs.length);
  let pending = set.map((_, i) => i);
  for (let tries = 0; pending.length > 0; tries += 1) {
    if (tries === NUMBER_TRIES) throw new Error(`could not draw a free account number in ${NUMBER_TRIES} tries`);
    for (const i of pending) set[i]!.account.number = draw();
    const made = await insertAccountsWithTrees(trx, pending.map((i) => set[i]!), also);
    pending = pending.filter((i, k) => {
      const row = made[k];
      if (row) built[i] = { id: row.id, number: set[i]!.account.number };
      return !row;
    });
  }
  const accounts = built as BuiltAccount[];
  if (supplier.customer_emails) {
    await queueEmails(deps.queue, trx, inputs.flatMap(({ data }, i) => {
      const { id, number } = accounts[i]!;
      return data.customers.flatMap((c) => welcomeEmail(c, number) ?? []).map((email) => ({ accountId: id, ...email }));
    }));
  }
  return accounts;
}
