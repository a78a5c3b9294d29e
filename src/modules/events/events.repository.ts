import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { NewEvent } from './event-types.ts';

// The events table (migration 004). Free functions, executor first.
type Db = Kysely<Database>;

/** The insert of events, built and not yet run (events.ts runs it, alone or with the write they report). */
export function eventsInsert(trx: Transaction<Database>, events: readonly NewEvent[]) {
  return trx.insertInto('events').values(events.map((event) => ({
    supplier_id: event.supplierId,
    type: event.type,
    external_account_number: event.externalAccountNumber,
    data: JSON.stringify(event.data),
  })));
}

/** A webhook endpoint's test ping: an event of no supplier, so that no feed shows it and the fan-out never reads it. */
export async function insertPing(trx: Transaction<Database>): Promise<{ id: number; created_at: Date }> {
  return trx.insertInto('events').values({ supplier_id: null, type: 'ping', external_account_number: null, data: '{}' })
    .returning(['id', 'created_at']).executeTakeFirstOrThrow();
}

/** A place in feed order: the writing transaction's id (xid8, as text) and the event id. */
export interface FeedPosition { xid: string; id: number }

export interface EventRow {
  id: number;
  xid: string;
  type: string;
  external_account_number: string | null;
  data: unknown;
  created_at: Date;
  import_supplier: string;
}

/** The position of one of the supplier's events, if it exists (it may have aged out, or never have). */
export function findFeedPosition(db: Db, supplierId: number, eventId: number): Promise<FeedPosition | undefined> {
  return db.selectFrom('events').select([sql<string>`xid::text`.as('xid'), 'id'])
    .where('supplier_id', '=', supplierId).where('id', '=', eventId)
    .executeTakeFirst();
}

/** Whether the event with this id is a test ping (which no feed holds). */
export async function isPing(db: Db, eventId: number): Promise<boolean> {
  const row = await db.selectFrom('events').select('id').where('id', '=', eventId).where('type', '=', 'ping').executeTakeFirst();
  return row !== undefined;
}

/**
 * Only events whose transaction is older than the oldest one still running are returned: every
 * transaction that could still commit an event has a larger xid, so nothing can later appear before
 * a position a reader has already passed. A long-running writing transaction delays the feed (it
 * never loses or reorders events).
 */
export const committedBeforeEveryRunning = sql<boolean>`e.xid < pg_snapshot_xmin(pg_current_snapshot())`;

export function feedPage(db: Db, supplierId: number, after: FeedPosition | null, limit: number): Promise<EventRow[]> {
  let query = db.selectFrom('events as e')
    .innerJoin('import_suppliers as s', 's.id', 'e.supplier_id')
    .select(['e.id', sql<string>`e.xid::text`.as('xid'), 'e.type', 'e.external_account_number', 'e.data', 'e.created_at',
      's.code as import_supplier'])
    .where('e.supplier_id', '=', supplierId)
    .where(committedBeforeEveryRunning);
  if (after) query = query.where(sql<boolean>`(e.xid, e.id) > (${after.xid}::xid8, ${after.id})`);
  return query.orderBy('e.xid').orderBy('e.id').limit(limit).execute();
}

/** Retention: removes events created before `before`, at most `batch` at a time; returns how many. */
export async function deleteEventsBefore(db: Db, before: Date, batch: number): Promise<number> {
  const result = await db.deleteFrom('events')
    .where('id', 'in', (eb) => eb.selectFrom('events').select('id').where('created_at', '<', before).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
