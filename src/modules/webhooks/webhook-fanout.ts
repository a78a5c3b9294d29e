import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import { DELIVERY_JOB_POLICY, DELIVERY_QUEUE, firstAttempt, type DeliveryJob } from './webhook-delivery.ts';
import * as repo from './webhooks.repository.ts';

// The fan-out (D13): turns new events into delivery jobs, one per (matching enabled endpoint, event).
// It reads the events past one stored cursor in feed order — (xid, id), only what committed before
// every running transaction (docs/events.md) — and, per batch, sends the delivery jobs and moves the
// cursor in the same transaction: a killed fan-out rolls back both, so every event is fanned out
// exactly once, whichever instance does it. The cursor row's lock makes instances take turns.
//
// What starts a fan-out (at most one waiting fan-out job at a time, not one per request):
// - the statement that records events, when a supplier of theirs belongs to an organisation with an
//   enabled endpoint and no fan-out job is waiting to be fetched, writes one: a trigger on the events
//   table (migration 027), so every writer of events wakes the fan-out, in its own statement;
// - a fan-out that saw other transactions running when it read (they may commit events it could not
//   see, or hold back committed ones) sends itself again, to run shortly after (the fan-out's handler);
// - a pg-boss schedule every minute, the backstop for events recorded before any process opened the
//   queue (the trigger writes no job while the queue's tables are missing).
// Why skipping when a job is waiting loses nothing: the trigger checks after the events' insert (in a
// snapshot of its own), so their transaction already has an xid. The waiting job is fetched after
// that check, and its fan-out reads after the fetch: then the transaction has either committed (its
// event is read, or held back by an older running transaction) or is still running; in both cases
// someone was running at that read, so the fan-out runs again. A transaction that starts after the
// read finds that fan-out's job no longer waiting, and writes its own (unless another is waiting, and
// the same holds for that one).

export const FANOUT_QUEUE = 'webhook_fanout';
export const FANOUT_BATCH = 500;
/**
 * Seconds a fan-out job waits before a worker may take it: the event transactions of that time find
 * it waiting and write none, so under load there are a few fan-outs a second, each with many events.
 * The events' trigger (migration 027) waits as long, in the same queue: webhooks.test.ts holds the
 * two to each other.
 */
export const GATHER_SECONDS = 0.25;
const sendFanout = (queue: JobQueue) => queue.send(FANOUT_QUEUE, {}, { startAfter: GATHER_SECONDS });

export interface WebhookFanout {
  /**
   * The fan-out queue's handler for one worker. When the previous run saw other transactions running
   * (under load), the next run is queued before this one reads, so that event-writing statements
   * always find one waiting; otherwise only after, and only if this run saw transactions running.
   */
  handler(): () => Promise<void>;
}

/**
 * The process's fan-out, built once by the composition root (composition.ts) once the queue is open:
 * its handler goes to the fan-out workers. What wakes it is the events table's trigger (above).
 */
export function createWebhookFanout({ db, queue }: { db: Kysely<Database>; queue: JobQueue }): WebhookFanout {
  return {
    handler() {
      let busy = false;
      return async () => {
        await absorbQueuedFanouts(queue);
        const queuedAhead = busy ? (await sendFanout(queue), true) : false;
        const { othersRunning } = await fanOut(db, queue);
        busy = othersRunning;
        // A waiting job (another trigger's) is fetched later and reads later: it covers them too.
        if (othersRunning && !queuedAhead && !(await queue.hasWaiting(FANOUT_QUEUE, db))) await sendFanout(queue);
      };
    },
  };
}

async function fanOut(db: Kysely<Database>, queue: JobQueue): Promise<{ events: number; deliveries: number; othersRunning: boolean }> {
  const total = { events: 0, deliveries: 0, othersRunning: false };
  for (;;) {
    const batch = await db.transaction().execute((trx) => fanOutBatch(trx, queue));
    total.events += batch.events;
    total.deliveries += batch.deliveries;
    if (batch.events < FANOUT_BATCH) return { ...total, othersRunning: batch.othersRunning };
  }
}

async function fanOutBatch(trx: Transaction<Database>, queue: JobQueue): Promise<{ events: number; deliveries: number; othersRunning: boolean }> {
  const cursor = await repo.lockCursor(trx);
  const { events, othersRunning } = await repo.eventsPast(trx, cursor, FANOUT_BATCH);
  if (events.length === 0) return { events: 0, deliveries: 0, othersRunning };
  const endpoints = await repo.enabledEndpointsOf(trx, [...new Set(events.map((e) => e.organisation_id))]);
  const jobs: DeliveryJob[] = [];
  for (const event of events) {
    for (const endpoint of endpoints) {
      if (endpoint.organisation_id !== event.organisation_id) continue;
      if (endpoint.event_types !== null && !endpoint.event_types.includes(event.type)) continue;
      // An endpoint receives the events recorded since it was created or last enabled again, not the
      // history before it nor what happened while it was disabled.
      if (event.created_at < endpoint.enabled_at) continue;
      jobs.push(firstAttempt(endpoint, event.id));
    }
  }
  await queue.sendMany(DELIVERY_QUEUE, jobs, { trx, ...DELIVERY_JOB_POLICY });
  const last = events[events.length - 1]!;
  await repo.moveCursor(trx, { xid: last.xid, id: last.id });
  return { events: events.length, deliveries: jobs.length, othersRunning };
}

/**
 * A fan-out drains everything committed so far, so the fan-out jobs queued meanwhile by other
 * events have nothing left to do: they are taken and completed here, before draining (if this
 * worker dies, its own job runs again).
 */
async function absorbQueuedFanouts(queue: JobQueue): Promise<number> {
  return queue.completeReady(FANOUT_QUEUE, 1000);
}
