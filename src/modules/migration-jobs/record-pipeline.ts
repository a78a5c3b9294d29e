import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError, type FieldError } from '../../core/errors.ts';
import { compileValidator, type Validator } from '../../core/validation.ts';
import { UNKNOWN_FIELD_DETAIL } from '../../core/field-errors.ts';
import { retryableStoreFailure, STORE_FAILURES } from '../../db/errors.ts';
import type { JobQueue } from '../../queue/queue.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../events/index.ts';
import { validateAccountData, type AccountData } from '../account-data/index.ts';
import type { Imports } from '../account-imports/index.ts';
import { rehearse } from '../../db/rehearsal.ts';
import type { Caller } from '../../core/caller.ts';
import { readSupplier } from '../../core/directory.ts';
import { CreateNotesBody } from '../notes/index.ts';
import type { Notes } from '../notes/index.ts';
import { askTheVendor, CreatePaymentInstructionBody } from '../payment-instructions/index.ts';
import type { AskVendor, PaymentInstructions, PaymentVendor, VendorInstruction } from '../payment-instructions/index.ts';
import { CreateStatementsBody } from '../statements/index.ts';
import type { Statements } from '../statements/index.ts';
import { CreateTransactionsBody } from '../transactions/index.ts';
import type { Transactions } from '../transactions/index.ts';
import { findAccountDrift } from '../accounts/index.ts';
import { markRecordCreated, type RecordRow, type WorkerJobRow } from './migration-jobs.repository.ts';
import type { RecordError, RecordStep, RecordWarning } from './migration-jobs.schemas.ts';

// One record of a migration job (D11), step by step, each step through the service of its endpoint:
// the same validation (the endpoint's own body schema), the same rules, codes and transactions. The
// steps are idempotent: staging an imported account is refused and the create then answers
// account_already_imported (the record goes on with created: false); statements, transactions, notes
// and the payment instruction dedupe as their endpoints do. So a record run twice (a retry, a crash,
// the same file uploaded again) makes nothing twice.

/** The modules whose services a record's steps are: the same objects the endpoints' routes call. */
export interface RecordSteps {
  /** Stage and create (its staging writer commits a record's stage with the stages running beside it). */
  imports: Imports;
  statements: Statements;
  transactions: Transactions;
  notes: Notes;
  payments: PaymentInstructions;
}

export interface PipelineDeps extends RecordSteps {
  db: Kysely<Database>;
  queue: JobQueue;
  /** The process's events (a chunk writes its history's events through it). */
  events: Events;
  /** The time a chunk's notes are stamped with, as the notes' import stamps them. */
  clock: Clock;
  /** Where a record's unexpected failure goes, with its stack, job and line (the record only says internal_error). */
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

/** `warnings`: how the record differs from its account when that was imported before (drift). */
export type RecordRun =
  | { kind: 'done'; outcome: 'succeeded' | 'skipped' | 'failed'; step: RecordStep | null; created: boolean | null; serviceAccountNumber: string | null; errors: RecordError[]; warnings: RecordWarning[] }
  | { kind: 'transient'; step: RecordStep; created: boolean | null; serviceAccountNumber: string | null; errors: RecordError[]; warnings: RecordWarning[] };

/** Failures worth retrying as they are: the same request may well succeed a little later. */
export const TRANSIENT_CODES = new Set(['concurrency_limit_exceeded', 'payment_vendor_unavailable', 'service_unavailable', 'account_import_in_progress']);

const validators = new Map<object, Validator>();
/** The compiled validator of an endpoint's body schema (compiled once per process). */
export function validatorFor(schema: object): Validator {
  let validator = validators.get(schema);
  if (!validator) validators.set(schema, validator = compileValidator(schema));
  return validator;
}

class StepFailure extends Error {
  constructor(
    readonly step: RecordStep, readonly errors: RecordError[], readonly transient: boolean,
    /** The error nobody expected (a bug, a constraint no rule checks): logged with its stack. */
    readonly unexpected?: unknown,
  ) { super(errors[0]?.detail ?? step); }
}

/**
 * A record of a real job runs its steps for real. A record of a dry-run job (a pre-flight) runs the
 * very same steps inside one transaction that is rolled back (db/rehearsal.ts): every rule of every
 * step is checked as the real run will check it, against what the earlier steps would have written
 * (the balance bound starts from the stored balance, a statement's period closes before the
 * transactions), and nothing stays: no staged row, account, history, event or count.
 */
export async function runRecord(deps: PipelineDeps, job: WorkerJobRow, row: RecordRow): Promise<RecordRun> {
  if (!job.dry_run) return runSteps(deps, job, row);
  // The rehearsal is one transaction, and a payment vendor is never asked with it open: the answer
  // can take seconds, and meanwhile the transaction would hold a connection (on PGlite, the one
  // session every request waits for). When the payment step must ask, the rehearsal stops there and
  // rolls back, the vendor is asked outside it, and the rehearsal runs again from the start with the
  // answer: the vendor is asked exactly when, and as often as, the real run would ask it.
  const answers = new Map<string, VendorInstruction>();
  const question = (vendor: PaymentVendor, reference: string) => `${vendor.id}:${reference}`;
  const ask: AskVendor = (vendor, reference) => {
    const answer = answers.get(question(vendor, reference));
    return answer ? Promise.resolve(answer) : Promise.reject(new VendorToAsk(vendor, reference));
  };
  let run: RecordRun;
  for (;;) {
    try {
      run = await rehearse(deps.db, (db) => runSteps({ ...deps, ...stepsOn(deps, db, ask), db }, job, row));
      break;
    } catch (error) {
      if (error instanceof VendorToAsk && !answers.has(question(error.vendor, error.reference))) {
        answers.set(question(error.vendor, error.reference), await askTheVendor(error.vendor, error.reference));
        continue;
      }
      // The rehearsal's own transaction failed (the store went away): the record's steps are unknown.
      return failedRun(deps, job, row, error, { created: row.created, number: row.service_account_number, warnings: [] });
    }
  }
  // An account the rehearsal made was rolled back with it: the pre-flight created nothing.
  return run.created === true ? { ...run, created: false, serviceAccountNumber: null } : run;
}

/** A pre-flight's payment step needs the vendor's answer, which is asked outside its rehearsal (runRecord). */
class VendorToAsk extends Error {
  constructor(readonly vendor: PaymentVendor, readonly reference: string) { super('the vendor is asked outside the rehearsal'); }
}

/** The steps over another handle of the store (a rehearsal's), the payment step asking the vendor through `ask`. */
function stepsOn(steps: RecordSteps, db: Kysely<Database>, ask: AskVendor): RecordSteps {
  return {
    imports: steps.imports.on(db), statements: steps.statements.on(db), transactions: steps.transactions.on(db), notes: steps.notes.on(db),
    payments: steps.payments.on(db, ask),
  };
}

async function runSteps(deps: PipelineDeps, job: WorkerJobRow, row: RecordRow): Promise<RecordRun> {
  const record = row.record as Record<string, unknown>;
  // Each step's service finds the job's supplier in the row read with the record's claim instead of
  // reading it again: the same row, read moments before, for this record only.
  const caller: Caller = {
    organisationId: job.organisation_id,
    apiKeyId: 0,
    findSupplier: (code) => (code === job.supplier.code ? Promise.resolve(job.supplier) : readSupplier(deps.db, job.organisation_id, code)),
  };
  let created: boolean | null = row.created;
  let number: string | null = row.service_account_number;
  let warnings: RecordWarning[] = [];
  try {
    // 1. The account: validated, staged, created with the job's team.
    const account = record.account as AccountData;
    // Another supplier's code is refused as such; a code missing or not text is the account data's
    // own error, reported by its validation with every other.
    if (typeof account.import_supplier === 'string' && account.import_supplier !== job.supplier_code) {
      throw new StepFailure('account', [{ code: 'invalid', attr: 'account.import_supplier', detail: `The record's supplier must be the job's supplier, "${job.supplier_code}".` }], false);
    }
    const invalid = validateAccountData(account);
    if (invalid) throw new StepFailure('account', prefixed(invalid, 'account'), false);
    const ext = account.external_account_number;
    let imported = false;
    let stored: AccountData | undefined;
    try {
      stored = (await deps.imports.stage(caller, account)).stored;
    } catch (error) {
      const known = alreadyImportedNumber(error);
      if (known === null) throw asStepFailure('account', error, 'account');
      number = known;
      imported = true;
      created ??= false;
    }
    // Staging refused: the account was imported before (by this record's earlier try, or by
    // anything else). What the record sends is compared with what was stored.
    if (imported) warnings = await driftOf(deps, job, account);
    if (!imported) {
      try {
        const made = await deps.imports.create(caller, {
          import_supplier_code: job.supplier_code, external_account_number: ext, operations_team_name: job.operations_team_name,
        }, {
          // A pre-flight's record is not marked: its account is rolled back.
          onCreated: job.dry_run ? undefined : (trx, made) => markRecordCreated(trx, job.id, row.line, made),
          // Made from this record's data only, not from what another request staged since.
          stagedByCaller: stored,
        });
        number = made.service_account_number;
        created = true;
      } catch (error) {
        const known = alreadyImportedNumber(error);
        if (known === null) throw asStepFailure('account', error, 'account');
        number = known;
        created ??= false;
        warnings = await driftOf(deps, job, account);
      }
    }
    // 2. The account's history, statements first (they close periods).
    const base = { import_supplier: job.supplier_code, external_account_number: ext };
    if (present(record.statements)) {
      const body = { ...base, statements: record.statements };
      await runStep('statements', CreateStatementsBody, body, '', () => deps.statements.import(caller, body as CreateStatementsBody));
    }
    if (present(record.transactions)) {
      const body = { ...base, transactions: record.transactions };
      await runStep('transactions', CreateTransactionsBody, body, '', () => deps.transactions.import(caller, body as CreateTransactionsBody,
        { checkPreviouslyAdded: true, forceAddToCurrentStatement: true }));
    }
    if (present(record.notes)) {
      const body = { ...base, notes: record.notes };
      await runStep('notes', CreateNotesBody, body, '', () => deps.notes.import(caller, body as CreateNotesBody));
    }
    if (record.payment_instruction !== undefined && record.payment_instruction !== null) {
      const body = instructionBody(record.payment_instruction, base);
      await runStep('payment_instruction', CreatePaymentInstructionBody, body, 'payment_instruction',
        () => deps.payments.create(caller, body as CreatePaymentInstructionBody));
    }
    return { kind: 'done', outcome: 'succeeded', step: null, created, serviceAccountNumber: number, errors: [], warnings };
  } catch (error) {
    return failedRun(deps, job, row, error, { created, number, warnings });
  }
}

/** The record's run when a step threw: skipped, a transient failure to retry, or failed (logged when unexpected). */
function failedRun(
  deps: PipelineDeps, job: WorkerJobRow, row: RecordRow, error: unknown,
  progress: { created: boolean | null; number: string | null; warnings: RecordWarning[] },
): RecordRun {
  const { created, number, warnings } = progress;
  if (error instanceof Skipped) return { kind: 'done', outcome: 'skipped', step: null, created: null, serviceAccountNumber: null, errors: [], warnings };
  const failure = error instanceof StepFailure ? error : asStepFailure('account', error, 'account');
  if (failure.unexpected !== undefined) {
    deps.log.error({ err: failure.unexpected, job_id: job.id, line: row.line, step: failure.step }, 'migration record failed unexpectedly');
  }
  return failure.transient
    ? { kind: 'transient', step: failure.step, created, serviceAccountNumber: number, errors: failure.errors, warnings }
    : { kind: 'done', outcome: 'failed', step: failure.step, created, serviceAccountNumber: number, errors: failure.errors, warnings };
}

/**
 * How the record's account data differs from the account imported before: warnings, or with the
 * job's on_drift `fail`, the record's failure at step account (account_differs, one error a difference).
 */
async function driftOf(deps: PipelineDeps, job: WorkerJobRow, account: AccountData): Promise<RecordWarning[]> {
  const drift = await findAccountDrift(deps.db, job.supplier_id, account);
  if (drift.length > 0 && job.on_drift === 'fail') {
    throw new StepFailure('account', drift.map(({ code, attr, detail }) => ({ code, attr, detail })), false);
  }
  return drift;
}

class Skipped extends Error {}

/** Empty arrays mean "nothing of this kind": no call is made for them. */
function present(value: unknown): boolean {
  return value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0);
}

/**
 * The payment instruction endpoint's body for the record's instruction ({vendor, reference, type}): the
 * account it is for is the record's own. An instruction naming an account or a supplier itself is
 * refused at that field, as the endpoint refuses a field it does not take; it never redirects the
 * instruction to another account.
 */
function instructionBody(instruction: unknown, base: { import_supplier: string; external_account_number: string }): unknown {
  if (typeof instruction !== 'object' || instruction === null || Array.isArray(instruction)) return instruction;
  const named = Object.keys(base).filter((key) => Object.hasOwn(instruction, key));
  if (named.length > 0) {
    throw new StepFailure('payment_instruction', named.map((key) => ({ code: 'unknown_field', attr: `payment_instruction.${key}`, detail: UNKNOWN_FIELD_DETAIL })), false);
  }
  return { ...instruction, ...base };
}

async function runStep(step: RecordStep, schema: object, body: unknown, prefix: string, call: () => Promise<unknown>): Promise<void> {
  const invalid = validatorFor(schema)(body);
  if (invalid) throw new StepFailure(step, prefixed(invalid, prefix), false);
  try {
    await call();
  } catch (error) {
    throw asStepFailure(step, error, prefix);
  }
}

function alreadyImportedNumber(error: unknown): string | null {
  if (error instanceof AppError && error.code === 'account_already_imported') {
    return String(error.extra?.service_account_number ?? '') || null;
  }
  if (error instanceof AppError && error.code === 'account_marked_to_skip') throw new Skipped();
  return null;
}

function asStepFailure(step: RecordStep, error: unknown, prefix: string): StepFailure {
  if (error instanceof StepFailure || error instanceof Skipped || error instanceof VendorToAsk) throw error;
  if (error instanceof AppError) {
    const errors = error.errors && error.errors.length > 0
      ? prefixed(error.errors, prefix)
      : [{ code: error.code, attr: prefix || step, detail: error.detail }];
    return new StepFailure(step, errors, TRANSIENT_CODES.has(error.code));
  }
  const retryable = retryableStoreFailure(error);
  if (retryable) return new StepFailure(step, [{ code: 'service_unavailable', attr: prefix || step, detail: STORE_FAILURES[retryable].detail }], true);
  return new StepFailure(step, [{ code: 'internal_error', attr: prefix || step, detail: 'An unexpected error occurred; it has been logged.' }], false, error);
}

/**
 * Field errors of an endpoint's body, as paths from the record: `customers.0.mobile` of the account
 * is `account.customers.0.mobile`; the account-naming fields of a history body point at the account.
 */
function prefixed(errors: FieldError[], prefix: string): RecordError[] {
  return errors.map((e) => {
    let attr = e.attr;
    if (prefix !== 'account' && (attr === 'external_account_number' || attr === 'import_supplier')) attr = `account.${attr}`;
    else if (prefix) attr = attr === 'non_field_errors' || attr === '' ? prefix : `${prefix}.${attr}`;
    return { code: e.code, attr, detail: e.detail };
  });
}
