import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import { setEventRecordedHook } from '../events/events.repository.ts';
import { DELIVERY_JOB_POLICY, DELIVERY_QUEUE, type DeliveryJob } from './webhook-delivery.ts';
import * as repo from './webhooks.repository.ts';

// The fan-out (D13): turns new events into delivery jobs, one per (matching enabled endpoint, event).
// It reads the events past one stored cursor in feed order — (xid, id), only what committed before
// every running transaction (docs/events.md) — and, per batch, sends the delivery jobs and moves the
// cursor in the same transaction: a killed fan-out rolls back both, so every event is fanned out
// exactly once, whichever instance does it. The cursor row's lock makes instances take turns.
//
// What starts a fan-out:
// - the transaction that records an event, when the supplier's organisation has an enabled endpoint,
//   writes a fan-out job (at most one per transaction) with the event (registerFanoutTrigger);
// - while committed events are held back by a still-running older transaction, the fan-out sends
//   itself again a second later;
// - a pg-boss schedule every minute, the backstop for events recorded by a process that never opened
//   the queue (nothing registered the trigger there).

export const FANOUT_QUEUE = 'webhook_fanout';
export const FANOUT_BATCH = 500;
const HELD_BACK_RECHECK_SECONDS = 1;

export async function fanOut(db: Kysely<Database>, queue: JobQueue): Promise<{ events: number; deliveries: number }> {
  const total = { events: 0, deliveries: 0 };
  for (;;) {
    const batch = await db.transaction().execute((trx) => fanOutBatch(trx, queue));
    total.events += batch.events;
    total.deliveries += batch.deliveries;
    if (batch.events < FANOUT_BATCH) break;
  }
  if (await repo.eventsHeldBack(db, await repo.readCursor(db))) {
    await queue.send(FANOUT_QUEUE, {}, { startAfter: HELD_BACK_RECHECK_SECONDS });
  }
  return total;
}

async function fanOutBatch(trx: Transaction<Database>, queue: JobQueue): Promise<{ events: number; deliveries: number }> {
  const cursor = await repo.lockCursor(trx);
  const events = await repo.eventsPast(trx, cursor, FANOUT_BATCH);
  if (events.length === 0) return { events: 0, deliveries: 0 };
  const endpoints = await repo.enabledEndpointsOf(trx, [...new Set(events.map((e) => e.organisation_id))]);
  const jobs: DeliveryJob[] = [];
  for (const event of events) {
    for (const endpoint of endpoints) {
      if (endpoint.organisation_id !== event.organisation_id) continue;
      if (endpoint.event_types !== null && !endpoint.event_types.includes(event.type)) continue;
      // An endpoint receives the events recorded since it was created or last enabled again, not the
      // history before it nor what happened while it was disabled.
      if (event.created_at < endpoint.enabled_at) continue;
      jobs.push({ endpoint_id: endpoint.id, event_id: event.id, attempt: 1 });
    }
  }
  await queue.sendMany(DELIVERY_QUEUE, jobs, { trx, ...DELIVERY_JOB_POLICY });
  const last = events[events.length - 1]!;
  await repo.moveCursor(trx, { xid: last.xid, id: last.id });
  return { events: events.length, deliveries: jobs.length };
}

/**
 * Makes recordEvent write a fan-out job in the event's own transaction, so the job exists exactly
 * when the event committed (nothing to lose between commit and send). Registered once per process
 * by openQueue, so that recordEvent's many call sites need no queue parameter. The job carries no
 * key that is unique across transactions: a unique key would make concurrent event-writing
 * transactions wait for each other's commit.
 */
export function registerFanoutTrigger(queue: JobQueue): void {
  const triggered = new WeakSet<object>();
  setEventRecordedHook(async (trx, event) => {
    if (triggered.has(trx)) return;
    if (!(await repo.supplierHasEndpoint(trx, event.supplierId))) return;
    triggered.add(trx);
    await queue.send(FANOUT_QUEUE, {}, { trx });
  });
}

/**
 * A fan-out drains everything committed so far, so the fan-out jobs queued meanwhile by other
 * events have nothing left to do: they are taken and completed here, before draining (if this
 * worker dies, its own job runs again).
 */
export async function absorbQueuedFanouts(queue: JobQueue): Promise<number> {
  const jobs = await queue.boss.fetch(FANOUT_QUEUE, { batchSize: 1000 });
  if (!jobs || jobs.length === 0) return 0;
  await queue.boss.complete(FANOUT_QUEUE, jobs.map((j) => j.id));
  return jobs.length;
}
