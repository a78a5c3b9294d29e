import type { Config } from './config.ts';
import { systemClock, type Clock } from './core/clock.ts';
import type { Store } from './db/store.ts';
import { defineEmailQueue, startOutboxSender, type SenderLogger } from './modules/email/index.ts';
import { createStagingWriter, type StagingWriter } from './modules/account-imports/index.ts';
import { defineMigrationQueues, startMigrationWorkers } from './modules/migration-jobs/index.ts';
import { createWebhookFanout, defineWebhookQueues, startWebhookWorkers, type WebhookFanout } from './modules/webhooks/index.ts';
import { createEvents, type Events } from './modules/events/index.ts';
import { createJobQueue, type JobQueue } from './queue/queue.ts';

// The background side of the service, shared by `npm start` (HTTP and workers) and `npm run worker`
// (workers only). It never imports the HTTP layer: workers call the services directly.

export interface WorkerLogger extends SenderLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * Opens the job queue over the store and declares every queue, so an instance that only serves HTTP
 * (WORKER_CONCURRENCY=0) can still enqueue. pg-boss creates its schema (`pgboss`) on first start;
 * queue.start serialises that across instances starting together.
 */
export async function openQueue(store: Store, logger: WorkerLogger, config: Config): Promise<JobQueue> {
  const queue = createJobQueue(store, {
    maintenanceIntervalSeconds: config.queueMaintenanceIntervalSeconds,
    onError: (error) => logger.warn({ err: error }, 'job queue error; it retries'),
  });
  await queue.start();
  await defineEmailQueue(queue);
  await defineMigrationQueues(queue, config);
  await defineWebhookQueues(queue);
  return queue;
}

export interface Workers { stop(): Promise<void> }

/** Starts this instance's workers: WORKER_CONCURRENCY of them (0: none). */
export async function startWorkers({
  store, queue, config, logger, clock = systemClock, fanout = createWebhookFanout({ db: store.db, queue, clock }),
  events = createEvents({ onRecorded: fanout.trigger }), staging = createStagingWriter(store, events),
}: {
  store: Store; queue: JobQueue; config: Config; logger: WorkerLogger;
  /** The process's clock (main.ts, worker.ts); the system clock without one. */
  clock?: Clock;
  /** The process's webhook fan-out, shared with its HTTP app (main.ts); its own without one. */
  fanout?: WebhookFanout;
  /** The process's events, shared with its HTTP app (main.ts); its own (with the fan-out's trigger) without them. */
  events?: Events;
  /** The process's staging writer, shared with its HTTP app (main.ts); one of their own without one. */
  staging?: StagingWriter;
}): Promise<Workers> {
  if (config.workerConcurrency === 0) return { stop: async () => {} };
  const outbox = await startOutboxSender({
    db: store.db, queue, config, logger, concurrency: Math.min(2, config.workerConcurrency),
  });
  const migrations = await startMigrationWorkers({
    db: store.db, events, staging, queue, config, logger, concurrency: config.workerConcurrency,
  });
  const webhooks = await startWebhookWorkers({ db: store.db, queue, config, logger, clock, fanout });
  return {
    async stop() {
      await Promise.all([outbox.stop(), migrations.stop(), webhooks.stop()]);
    },
  };
}
