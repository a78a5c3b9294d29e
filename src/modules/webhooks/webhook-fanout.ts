import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import type { EventRecordedHook } from '../events/index.ts';
import { DELIVERY_JOB_POLICY, DELIVERY_QUEUE, type DeliveryJob } from './webhook-delivery.ts';
import * as repo from './webhooks.repository.ts';

// The fan-out (D13): turns new events into delivery jobs, one per (matching enabled endpoint, event).
// It reads the events past one stored cursor in feed order — (xid, id), only what committed before
// every running transaction (docs/events.md) — and, per batch, sends the delivery jobs and moves the
// cursor in the same transaction: a killed fan-out rolls back both, so every event is fanned out
// exactly once, whichever instance does it. The cursor row's lock makes instances take turns.
//
// What starts a fan-out (at most one waiting fan-out job at a time, not one per request):
// - the transaction that records an event, when the supplier's organisation has an enabled endpoint
//   and no fan-out job is waiting to be fetched, writes one (the fan-out's trigger);
// - a fan-out that saw other transactions running when it read (they may commit events it could not
//   see, or hold back committed ones) sends itself again, to run shortly after (the fan-out's handler);
// - a pg-boss schedule every minute, the backstop for events recorded by a process that never opened
//   the queue (its events were built without the trigger).
// Why skipping when a job is waiting loses nothing: the transaction checks after inserting its event,
// so it already has an xid. The waiting job is fetched after that check, and its fan-out reads after
// the fetch: then the transaction has either committed (its event is read, or held back by an older
// running transaction) or is still running; in both cases someone was running at that read, so the
// fan-out runs again. A transaction that starts after the read finds that fan-out's job no longer
// waiting, and writes its own (unless another is waiting, and the same holds for that one).

export const FANOUT_QUEUE = 'webhook_fanout';
export const FANOUT_BATCH = 500;
/**
 * Seconds a fan-out job waits before a worker may take it: the event transactions of that time find
 * it waiting and write none, so under load there are a few fan-outs a second, each with many events.
 */
const GATHER_SECONDS = 0.25;
/** How long this process trusts "this supplier's organisation has (no) enabled endpoint". */
export const ENDPOINT_LOOKUP_TTL_MS = 5000;

const sendFanout = (queue: JobQueue, trx?: Transaction<Database>) => queue.send(FANOUT_QUEUE, {}, { trx, startAfter: GATHER_SECONDS });

export interface WebhookFanout {
  /**
   * The events' after-record hook (given to createEvents): writes a fan-out job in the event's own
   * transaction when none is waiting, so a job exists exactly when the event committed (nothing to
   * lose between commit and send; see above for why a waiting one is enough). The job carries no key
   * that is unique across transactions: a unique key would make concurrent event-writing
   * transactions wait for each other's commit; the check for a waiting job is a read, which waits for
   * nobody.
   */
  readonly trigger: EventRecordedHook;
  /**
   * The fan-out queue's handler for one worker. When the previous run saw other transactions running
   * (under load), the next run is queued before this one reads, so that event transactions always find
   * one waiting; otherwise only after, and only if this run saw transactions running.
   */
  handler(): () => Promise<void>;
  /**
   * Forgets what this process knows of which suppliers have endpoints (an endpoint was created or
   * enabled through this process). Other processes learn it within ENDPOINT_LOOKUP_TTL_MS; until then
   * their events are fanned out by the next trigger or the schedule, never lost.
   */
  forgetEndpointLookups(): void;
}

/**
 * The process's fan-out, built once by the composition root (composition.ts) once
 * the queue is open: its trigger goes to createEvents, so that the many services recording events need
 * no queue of their own; its handler to the fan-out workers; its lookups are forgotten by the endpoint
 * routes and, after each import-admin command, by the admin socket. What it holds (which suppliers'
 * organisations have an enabled endpoint, until when that is trusted by `clock`) is its own state, not
 * the module's.
 */
export function createWebhookFanout({ db, queue, clock }: { db: Kysely<Database>; queue: JobQueue; clock: Clock }): WebhookFanout {
  /** supplier id → whether its organisation had an enabled endpoint, and until when (clock ms) that is trusted. */
  const endpointLookups = new Map<number, { has: boolean; until: number }>();

  async function supplierHasEndpoint(trx: Transaction<Database>, supplierId: number): Promise<boolean> {
    const known = endpointLookups.get(supplierId);
    if (known && known.until > clock.nowMs()) return known.has;
    const has = await repo.supplierHasEndpoint(trx, supplierId);
    if (endpointLookups.size > 10_000) endpointLookups.clear();
    endpointLookups.set(supplierId, { has, until: clock.nowMs() + ENDPOINT_LOOKUP_TTL_MS });
    return has;
  }

  const triggered = new WeakSet<object>();
  const trigger = async (trx: Transaction<Database>, supplierId: number) => {
    if (triggered.has(trx)) return;
    if (!(await supplierHasEndpoint(trx, supplierId))) return;
    triggered.add(trx);
    if (await queue.hasWaiting(FANOUT_QUEUE, trx)) return;
    await sendFanout(queue, trx);
  };
  // Idle while this process trusts that the supplier's organisation has no enabled endpoint.
  const idleFor = (supplierId: number) => {
    const known = endpointLookups.get(supplierId);
    return known !== undefined && known.until > clock.nowMs() && !known.has;
  };

  return {
    trigger: Object.assign(trigger, { idleFor }),
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
    forgetEndpointLookups() {
      endpointLookups.clear();
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
      jobs.push({ endpoint_id: endpoint.id, event_id: event.id, attempt: 1 });
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
