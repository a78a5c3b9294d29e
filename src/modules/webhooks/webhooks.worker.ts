import type { Kysely } from 'kysely';
import type { Config } from '../../config.ts';
import type { Clock } from '../../core/clock.ts';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import { deliverBatch, DELIVERY_JOB_POLICY, DELIVERY_QUEUE, type DeliveryJob } from './webhook-delivery.ts';
import { FANOUT_QUEUE, type WebhookFanout } from './webhook-fanout.ts';
import { RETENTION_CRON, RETENTION_QUEUE, runRetention } from './retention.job.ts';
import { createDeliveryAgents, DELIVERY_TIMEOUT_MS, PARALLEL_ATTEMPTS } from './webhook-http.ts';

// Webhooks and event retention on the job queue (D13). Three queues:
// - webhook_fanout {}: new events → delivery jobs (webhook-fanout.ts); also scheduled every minute;
// - webhook_delivery {endpoint_id, event_id, attempt, org}: one HTTP attempt (webhook-delivery.ts);
// - events_retention {}: daily, deletes old events and delivery log rows (retention.job.ts).

export type WebhooksConfig = Pick<Config, 'webhookRetryBaseMs' | 'webhookAllowPrivateNetworks' | 'eventsRetentionDays' | 'workerConcurrency'>;

export interface WebhooksLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Declares the queues and schedules (the fan-out's trigger is given to createEvents: webhook-fanout.ts). */
export async function defineWebhookQueues(queue: JobQueue): Promise<void> {
  await queue.define(FANOUT_QUEUE, { retryLimit: 1000, retryDelay: 2, retryBackoff: false, expireInSeconds: 300 });
  await queue.define(DELIVERY_QUEUE, DELIVERY_JOB_POLICY);
  await queue.define(RETENTION_QUEUE, { retryLimit: 5, retryDelay: 60, retryBackoff: true, expireInSeconds: 3600 });
  await queue.schedule(FANOUT_QUEUE, '* * * * *');
  await queue.schedule(RETENTION_QUEUE, RETENTION_CRON);
}

/** Delivery jobs one worker takes at a time: each is mostly waiting on a remote server, so many run at once. */
const DELIVERY_BATCH = 50;
const DELIVERY_WORKERS = PARALLEL_ATTEMPTS / DELIVERY_BATCH;

export async function startWebhookWorkers({ db, queue, config, logger, clock, fanout }: {
  db: Kysely<Database>; queue: JobQueue; config: WebhooksConfig; logger: WebhooksLogger; clock: Clock;
  /** The process's fan-out (the one whose trigger its events have): its handler runs the fan-out jobs. */
  fanout: WebhookFanout;
}): Promise<{ stop(): Promise<void> }> {
  await queue.work(FANOUT_QUEUE, { concurrency: 1, pollingIntervalSeconds: 0.5 }, fanout.handler());
  await queue.work(RETENTION_QUEUE, { concurrency: 1, pollingIntervalSeconds: 30 }, async () => {
    const removed = await runRetention(db, config.eventsRetentionDays, clock.now());
    logger.info({ removed, retention_days: config.eventsRetentionDays }, 'events retention ran');
  });

  // Deliveries are fetched in batches, shared out between organisations: one whose receivers take
  // their whole 10 s (or queued thousands of events) holds at most half of the attempts in hand while
  // another's wait, so another organisation's deliveries start at once. A batch's jobs run side by
  // side, and the store work is done once per batch (webhook-delivery.ts deliverBatch).
  const agents = createDeliveryAgents();
  const deps = {
    db, queue, retryBaseMs: config.webhookRetryBaseMs, allowPrivateNetworks: config.webhookAllowPrivateNetworks, logger, clock, agents,
  };
  // Never more attempts at once than the pools have sockets (webhook-http.ts).
  const workers = Math.max(1, Math.min(DELIVERY_WORKERS, config.workerConcurrency));
  await queue.workBatches<DeliveryJob>(DELIVERY_QUEUE, { concurrency: workers * DELIVERY_BATCH, batchSize: DELIVERY_BATCH, pollingIntervalSeconds: 0.5, shared: true },
    async (jobs) => {
      try {
        await deliverBatch(deps, jobs);
      } catch (error) {
        // Only the store can fail here (HTTP failures are outcomes); the queue runs the batch again,
        // and the attempts already logged are not made twice.
        logger.warn({ err: error }, 'webhook deliveries could not be recorded; the queue retries them');
        throw error;
      }
    });
  return {
    async stop() {
      await Promise.all([FANOUT_QUEUE, RETENTION_QUEUE].map((name) => queue.offWork(name)));
      // A delivery in hand waits for its remote server up to its own timeout.
      await queue.offWork(DELIVERY_QUEUE, DELIVERY_TIMEOUT_MS + 1000);
      agents.destroy();
    },
  };
}
