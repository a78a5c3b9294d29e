import { startOutboxSender } from './modules/email/index.ts';
import { MIGRATION_CHURNED_TABLES, startMigrationWorkers } from './modules/migration-jobs/index.ts';
import { startWebhookWorkers } from './modules/webhooks/index.ts';
import type { Modules, WorkerLogger } from './composition.ts';
import { startStoreVacuum } from './queue/store-vacuum.ts';

// The background side of the service, shared by `npm start` (HTTP and workers) and `npm run worker`
// (workers only). It never imports the HTTP layer: workers call the services directly.

export interface Workers { stop(): Promise<void> }

/** Starts this instance's workers over the process's modules (composition.ts): WORKER_CONCURRENCY of them (0: none). */
export async function startWorkers(modules: Modules, logger: WorkerLogger): Promise<Workers> {
  const { store, db, queue, config, clock, fanout, events } = modules;
  if (config.workerConcurrency === 0) return { stop: async () => {} };
  const outbox = await startOutboxSender({
    db, queue, config, logger, concurrency: Math.min(2, config.workerConcurrency),
  });
  const { imports, statements, transactions, notes, payments } = modules;
  const migrations = await startMigrationWorkers({
    db, events, queue, clock, config, logger, concurrency: config.workerConcurrency, imports, statements, transactions, notes, payments,
  });
  const webhooks = await startWebhookWorkers({ db, queue, config, logger, clock, fanout });
  // On PGlite only: what autovacuum does on a server, for the tables a migration job churns.
  const vacuum = await startStoreVacuum({ store, queue, tables: MIGRATION_CHURNED_TABLES });
  return {
    async stop() {
      await Promise.all([outbox.stop(), migrations.stop(), webhooks.stop(), vacuum.stop()]);
    },
  };
}
