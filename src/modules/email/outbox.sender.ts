import type { Kysely } from 'kysely';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import { transportFor, type EmailTransport } from './email.transports.ts';
import * as outbox from './outbox.repository.ts';

// Delivers the outbox: every instance runs a sender; SKIP LOCKED gives each a disjoint batch.
// Delivery is at least once (a sender that dies after sending but before marking sends again after
// the lease); a failed send is retried with exponential backoff, up to MAX_ATTEMPTS, then left with
// its last_error for an operator to see.

export const OUTBOX_POLICY = {
  batchSize: 20,
  /** How long a claimed email is reserved for its sender: longer than any send takes. */
  leaseSeconds: 300,
  maxAttempts: 10,
  /** Retry delay after the n-th failed attempt: base · 2^(n-1), at most maxDelay. */
  baseDelaySeconds: 30,
  maxDelaySeconds: 3600,
} as const;

export function retryDelaySeconds(attempts: number): number {
  return Math.min(OUTBOX_POLICY.maxDelaySeconds, OUTBOX_POLICY.baseDelaySeconds * 2 ** Math.max(0, attempts - 1));
}

export interface DeliveryResult { sent: number; failed: number }

/** One batch: claims due emails, sends each, marks it sent or schedules its retry. */
export async function deliverDueEmails(
  db: Kysely<Database>, transport: EmailTransport, from = 'no-reply@example.com',
): Promise<DeliveryResult> {
  const claimed = await outbox.claimDueEmails(db, OUTBOX_POLICY.batchSize, OUTBOX_POLICY.leaseSeconds, OUTBOX_POLICY.maxAttempts);
  const result: DeliveryResult = { sent: 0, failed: 0 };
  for (const email of claimed) {
    try {
      await transport.send({ from, to: email.recipient, subject: email.subject, text: email.body });
    } catch (error) {
      await outbox.scheduleRetry(db, email.id, retryDelaySeconds(email.attempts), (error as Error).message ?? String(error));
      result.failed += 1;
      continue;
    }
    await outbox.markSent(db, email.id);
    result.sent += 1;
  }
  return result;
}

export interface SenderLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface OutboxSender { stop(): Promise<void> }

/**
 * Polls the outbox every `config.outboxIntervalMs` (0 turns the sender off), draining full batches
 * back to back. stop() waits for the batch in flight, so shutdown never abandons a claimed email
 * half-marked.
 */
export function startOutboxSender({ db, config, logger, transport }: {
  db: Kysely<Database>;
  config: Pick<Config, 'emailTransport' | 'smtpUrl' | 'emailFrom' | 'outboxIntervalMs'>;
  logger: SenderLogger;
  transport?: EmailTransport;
}): OutboxSender {
  if (config.outboxIntervalMs === 0) return { stop: async () => {} };
  const via = transport ?? transportFor(config, logger);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const cycle = async () => {
    try {
      let result: DeliveryResult;
      do {
        result = await deliverDueEmails(db, via, config.emailFrom);
        if (result.sent + result.failed > 0) logger.info({ outbox: result }, 'outbox batch delivered');
      } while (!stopped && result.sent + result.failed === OUTBOX_POLICY.batchSize);
    } catch (error) {
      logger.error({ err: error }, 'outbox delivery failed; retrying at the next poll');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = cycle().finally(schedule);
    }, config.outboxIntervalMs);
    timer.unref();
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      via.close();
    },
  };
}
