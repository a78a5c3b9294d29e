import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { openDirectory, type Directory } from './core/directory.ts';
import type { Database } from './db/schema.ts';
import type { Store } from './db/store.ts';
import { createImports, type Imports } from './modules/account-imports/index.ts';
import { createTokenService, type TokenService } from './modules/auth/index.ts';
import { createEvents, type Events } from './modules/events/index.ts';
import { createNotes, type Notes } from './modules/notes/index.ts';
import { createPaymentInstructions, type PaymentInstructions } from './modules/payment-instructions/index.ts';
import { createStatements, type Statements } from './modules/statements/index.ts';
import { createTransactions, type Transactions } from './modules/transactions/index.ts';
import { createWebhookFanout, type WebhookFanout } from './modules/webhooks/index.ts';
import { createJobQueue, type JobQueue } from './queue/queue.ts';
import { defineEmailQueue, type SenderLogger } from './modules/email/index.ts';
import { defineMigrationQueues } from './modules/migration-jobs/index.ts';
import { defineWebhookQueues } from './modules/webhooks/index.ts';
import { defineStoreVacuum } from './queue/store-vacuum.ts';

// The composition root: every part of the service that holds state or is called by another module
// is built here, once per process, in the order they need each other, and handed to the HTTP app
// (app.ts), the workers (workers.ts), the CLI's socket (main.ts) and the tests' app. Nothing else
// builds them, and no module keeps state of its own at module level.
//
//   clock ─► directory ─► tokens
//   queue ─► fan-out ─► events (its trigger) ─► imports (the staging writer), notes, statements,
//            transactions, payment instructions (each over the store, the events and the clock)
//
// The modules at the top (migration jobs, webhook endpoints, stats, the account read, admin) are
// called by their own routes, workers and CLI only: their services take the parts they need from here.

/** What the queue and the workers log through (the process's pino logger, or a test's quiet one). */
export interface WorkerLogger extends SenderLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface Modules {
  config: Config;
  store: Store;
  /** The store's query builder (`store.db`). */
  db: Kysely<Database>;
  /** The time every decision is made by: a test moves it instead of sleeping. */
  clock: Clock;
  /** API keys and suppliers held in memory, forgotten on a notice from the store. */
  directory: Directory;
  tokens: TokenService;
  /** The job queue, open, every queue declared. */
  queue: JobQueue;
  /** The webhooks' fan-out on the queue (its handler, for the workers). */
  fanout: WebhookFanout;
  /** The one writer of events (the database wakes the fan-out for them). */
  events: Events;
  imports: Imports;
  notes: Notes;
  statements: Statements;
  transactions: Transactions;
  payments: PaymentInstructions;
  /** Stops the queue (waiting up to `timeoutMs` for jobs in hand) and the directory; the store stays open. */
  stop(timeoutMs: number): Promise<void>;
}

export async function composeModules({ config, store, logger, clock = systemClock }: {
  config: Config; store: Store; logger: WorkerLogger; clock?: Clock;
}): Promise<Modules> {
  const { db } = store;
  const directory = await openDirectory(store, clock);
  const tokens = await createTokenService({ db, directory, clock }, config);
  const queue = await openQueue(store, logger, config);
  const fanout = createWebhookFanout({ db, queue });
  const events = createEvents();
  const imports = createImports({ store, events, queue, clock, processConcurrencyLimit: config.processConcurrencyLimit });
  const history = { db, events, clock };
  return {
    config, store, db, clock, directory, tokens, queue, fanout, events, imports,
    notes: createNotes(history),
    statements: createStatements(history),
    transactions: createTransactions(history),
    payments: createPaymentInstructions(history),
    async stop(timeoutMs) {
      await queue.stop(timeoutMs);
      await directory.close();
    },
  };
}

/**
 * Opens the job queue over the store and declares every queue, so an instance that only serves HTTP
 * (WORKER_CONCURRENCY=0) can still enqueue. pg-boss creates its schema (`pgboss`) on first start;
 * queue.start serialises that across instances starting together.
 */
async function openQueue(store: Store, logger: WorkerLogger, config: Config): Promise<JobQueue> {
  const queue = createJobQueue(store, {
    maintenanceIntervalSeconds: config.queueMaintenanceIntervalSeconds,
    onError: (error) => logger.warn({ err: error }, 'job queue error; it retries'),
  });
  await queue.start();
  await defineEmailQueue(queue);
  await defineMigrationQueues(queue, config);
  await defineWebhookQueues(queue);
  await defineStoreVacuum(queue, store);
  return queue;
}
