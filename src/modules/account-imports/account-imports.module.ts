import type { Kysely, Transaction } from 'kysely';
import type { Caller } from '../../core/caller.ts';
import type { Clock } from '../../core/clock.ts';
import type { Database, Supplier } from '../../db/schema.ts';
import type { Store } from '../../db/store.ts';
import type { JobQueue } from '../../queue/queue.ts';
import type { AccountData } from '../account-data/index.ts';
import type { Events } from '../events/index.ts';
import type { AccountStatusResponse, ProcessAccountBody, ProcessAccountResponse } from './account-imports.schemas.ts';
import { accountStatus } from './account-status.service.ts';
import { createAccount, createNewAccounts, type CreateAccountDeps, type CreatedAccount, type NewAccount } from './create-account.service.ts';
import { stageAccount, type StageResult } from './stage-account.service.ts';
import { createStagingWriter, stagingOn, type StagingWriter } from './staging-writer.ts';

// The account imports module as the composition root builds it (composition.ts): stage, create and
// status, over the process's one staging writer, for the routes and the migration jobs' records alike.

export interface ImportsDeps {
  store: Pick<Store, 'db' | 'kind'>;
  events: Events;
  /** Where a created account's welcome emails go, in its creating transaction. */
  queue: JobQueue;
  clock: Clock;
  /** Creates running at once, at most (0: no limit). */
  processConcurrencyLimit: number;
  /** Where new accounts' numbers are drawn: newAccountNumber, unless a test forces a collision with its own. */
  drawAccountNumber?: (() => string) | undefined;
}

export interface Imports {
  /** Stage (create-or-update): validated by the caller against the account data schema. */
  stage(caller: Caller, data: AccountData): Promise<StageResult>;
  /**
   * Create (process) the staged account; `onCreated` is a write of the caller's that commits with the
   * account, `stagedByCaller` the data the caller staged, the only data the account may be made from.
   */
  create(caller: Caller, body: ProcessAccountBody, options?: Pick<CreateAccountDeps, 'onCreated' | 'stagedByCaller'>): Promise<ProcessAccountResponse>;
  /** An account's import status. */
  status(caller: Caller, supplierCode: string, externalAccountNumber: string): Promise<AccountStatusResponse>;
  /** Accounts never staged before, created together in the caller's transaction (a migration job's chunk). */
  createNewAccounts(trx: Transaction<Database>, supplier: Supplier, teamId: number, accounts: readonly NewAccount[]): Promise<CreatedAccount[]>;
  /**
   * The same module over another handle of the store (a pre-flight's rehearsal, db/rehearsal.ts):
   * its stages are written alone on that handle, where the process's shared batches cannot join.
   */
  on(db: Kysely<Database>): Imports;
}

/** One per process: it owns the process's staging writer, so stages from requests and from job records commit together. */
export function createImports(deps: ImportsDeps): Imports {
  return bound(deps, deps.store.db, createStagingWriter(deps.store, deps.events));
}

function bound(deps: ImportsDeps, db: Kysely<Database>, staging: StagingWriter): Imports {
  const parts = { db, staging, events: deps.events, queue: deps.queue, clock: deps.clock, processConcurrencyLimit: deps.processConcurrencyLimit,
    drawAccountNumber: deps.drawAccountNumber };
  return {
    stage: (caller, data) => stageAccount(parts, caller, data),
    create: (caller, body, options = {}) => createAccount({ ...parts, onCreated: options.onCreated, stagedByCaller: options.stagedByCaller }, caller, body),
    status: (caller, supplierCode, ext) => accountStatus(db, caller, supplierCode, ext),
    createNewAccounts: (trx, supplier, teamId, accounts) => createNewAccounts(trx, parts, supplier, teamId, accounts),
    on: (other) => bound(deps, other, stagingOn(other, deps.events)),
  };
}
