import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { deleteEventsBefore } from '../events/index.ts';
import { deleteDeliveriesBefore } from './webhooks.repository.ts';

// Retention (D13: events are kept at least 30 days): a daily job deletes events and webhook delivery
// log rows older than EVENTS_RETENTION_DAYS. In batches, each its own statement, so a large backlog
// never holds one long transaction (which would hold back the event feed, docs/events.md).

export const RETENTION_QUEUE = 'events_retention';
/** Daily, at a quiet minute (UTC). */
export const RETENTION_CRON = '17 3 * * *';
const BATCH = 5000;

export async function runRetention(db: Kysely<Database>, retentionDays: number, now: Date)
  : Promise<{ events: number; deliveries: number }> {
  const before = new Date(now.getTime() - retentionDays * 24 * 3600 * 1000);
  const removed = { events: 0, deliveries: 0 };
  for (let n = BATCH; n === BATCH;) removed.events += n = await deleteEventsBefore(db, before, BATCH);
  for (let n = BATCH; n === BATCH;) removed.deliveries += n = await deleteDeliveriesBefore(db, before, BATCH);
  return removed;
}
