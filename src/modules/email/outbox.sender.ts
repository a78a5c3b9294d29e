import type { Kysely } from 'kysely';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import { transportFor, type EmailTransport } from './email.transports.ts';
import * as outbox from './outbox.repository.ts';
import { WELCOME_EMAIL_QUEUE } from './outbox.repository.ts';

// Delivers the outbox on the job queue: each email has a job written with it; workers on every
// instance take jobs (pg-boss hands each to one worker). Delivery is at least once (a worker that
// dies after sending but before marking sends again once the job expires); a failed send is
// retried by the queue with exponential backoff, up to MAX_ATTEMPTS, then left with its last_error
// for an operator to see.

export const OUTBOX_POLICY = {
  maxAttempts: 10,
  /** The first retry comes after about this long; each next one about twice as late (pg-boss backoff, with jitter). */
  baseDelaySeconds: 30,
  /** How long one send may take before the queue gives the email to another worker. */
  expireInSeconds: 300,
} as const;

/** The queue's policy for welcome emails. */
export async function defineEmailQueue(queue: JobQueue): Promise<void> {
  await queue.define(WELCOME_EMAIL_QUEUE, {
    retryLimit: OUTBOX_POLICY.maxAttempts - 1,
    retryDelay: OUTBOX_POLICY.baseDelaySeconds,
    retryBackoff: true,
    expireInSeconds: OUTBOX_POLICY.expireInSeconds,
  });
}

export type DeliveryOutcome = 'sent' | 'already_sent';

/** One email job: sends it unless it was sent already; a failure is recorded and thrown (the queue retries). */
export async function deliverEmail(
  db: Kysely<Database>, transport: EmailTransport, from: string, emailId: number,
): Promise<DeliveryOutcome> {
  const email = await outbox.beginAttempt(db, emailId);
  if (!email) return 'already_sent';
  try {
    await transport.send({ from, to: email.recipient, subject: email.subject, text: email.body });
  } catch (error) {
    await outbox.recordFailure(db, email.id, (error as Error).message ?? String(error));
    throw error;
  }
  await outbox.markSent(db, email.id);
  return 'sent';
}

export interface SenderLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface OutboxSender { stop(): Promise<void> }

/**
 * Works the welcome-email queue on this instance. `config.outboxIntervalMs` is how often an idle
 * worker looks for a job (0 turns sending off on this instance). stop() closes the transport; the
 * queue's own stop waits for the sends in flight.
 */
export async function startOutboxSender({ db, queue, config, logger, transport, concurrency = 2 }: {
  db: Kysely<Database>;
  queue: JobQueue;
  config: Pick<Config, 'emailTransport' | 'smtpUrl' | 'emailFrom' | 'outboxIntervalMs'>;
  logger: SenderLogger;
  transport?: EmailTransport;
  concurrency?: number;
}): Promise<OutboxSender> {
  if (config.outboxIntervalMs === 0 || concurrency === 0) return { stop: async () => {} };
  const via = transport ?? transportFor(config, logger);
  await defineEmailQueue(queue);
  const name = await queue.work<{ email_id: number }>(
    WELCOME_EMAIL_QUEUE,
    { concurrency, pollingIntervalSeconds: Math.max(0.5, config.outboxIntervalMs / 1000) },
    async (job) => {
      try {
        const outcome = await deliverEmail(db, via, config.emailFrom, job.data.email_id);
        if (outcome === 'sent') logger.info({ email_id: job.data.email_id }, 'welcome email delivered');
      } catch (error) {
        logger.error({ err: error, email_id: job.data.email_id, attempt: job.retryCount + 1 }, 'welcome email failed; the queue retries it');
        throw error;
      }
    },
  );
  return {
    async stop() {
      await queue.offWork(name);
      via.close();
    },
  };
}
