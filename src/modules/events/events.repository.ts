import { sql, type Compilable, type Kysely, type OperationNodeSource, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';
import type { NewEvent } from './event-types.ts';

// The events table (migration 004). Free functions, executor first.
type Db = Kysely<Database>;

/**
 * Writes an event inside the transaction of the change it reports, so it commits or rolls back with
 * it. Taking a Transaction makes a call outside one a type error. `xid` defaults to the transaction's
 * id (pg_current_xact_id()), which orders the feed.
 */
export async function recordEvent(trx: Transaction<Database>, event: NewEvent): Promise<void> {
  await recordEvents(trx, [event]);
}

/**
 * recordEvent for many events of one transaction (the staging group commit's): one multi-row
 * INSERT, in the order given, then the after-record hook (afterRecorded).
 */
export async function recordEvents(trx: Transaction<Database>, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await eventsInsert(trx, events).execute();
  await afterRecorded(trx, events);
}

/**
 * recordEvents, written by the same statement as `write`, the change the events report (an INSERT …
 * RETURNING, built and not yet run): one round trip instead of two. Answers the rows `write` returns;
 * if `write` fails, no event is written either. With no write (an import that found nothing new),
 * the events alone. The statement is server-prepared (db/server-prepared.ts), so `write` must be an
 * INSERT … RETURNING named columns, whose plan does not depend on its values.
 */
export async function recordEventsWith<Row>(
  trx: Transaction<Database>, events: readonly NewEvent[], write: RawBuilder<Row> | (Compilable<Row> & OperationNodeSource) | null,
): Promise<Row[]> {
  if (events.length === 0) throw new Error('recordEventsWith needs at least one event');
  if (write === null) {
    await recordEvents(trx, events);
    return [];
  }
  const { rows } = await sql<Row>`${sql.raw(SERVER_PREPARED)} WITH written AS (${write}), recorded AS (${eventsInsert(trx, events)}) SELECT * FROM written`.execute(trx);
  await afterRecorded(trx, events);
  return rows;
}

function eventsInsert(trx: Transaction<Database>, events: readonly NewEvent[]) {
  return trx.insertInto('events').values(events.map((event) => ({
    supplier_id: event.supplierId,
    type: event.type,
    external_account_number: event.externalAccountNumber,
    data: JSON.stringify(event.data),
  })));
}

/**
 * A change and the events it writes in the same statement (`statement`), for a writer that cannot know its events before the change runs (the staging group commit:
 * whether each row was new). When the after-record hook surely has nothing to do for `supplierIds`
 * (hookIdleFor), the statement runs alone: one statement is atomic by itself, so the change and its
 * events commit together without BEGIN and COMMIT, two round trips fewer. Otherwise it runs in a
 * transaction, followed by the hook once per supplier.
 */
export async function writeWithEvents<Row>(
  db: Kysely<Database>, supplierIds: readonly number[], statement: RawBuilder<Row>, event: (supplierId: number) => NewEvent,
): Promise<Row[]> {
  if (supplierIds.every(hookIdleFor)) return (await statement.execute(db)).rows;
  return db.transaction().execute(async (trx) => {
    const { rows } = await statement.execute(trx);
    await afterRecorded(trx, supplierIds.map(event));
    return rows;
  });
}

/** Whether the after-record hook is known to do nothing for this supplier's events now. */
function hookIdleFor(supplierId: number): boolean {
  return afterRecord === null || (afterRecord.idleFor?.(supplierId) ?? false);
}

/**
 * The after-record hook, once per supplier with that supplier's first event, since what the hook does
 * (the webhooks' fan-out trigger) depends only on the transaction and the event's supplier.
 */
async function afterRecorded(trx: Transaction<Database>, events: readonly NewEvent[]): Promise<void> {
  if (!afterRecord) return;
  const told = new Set<number>();
  for (const event of events) {
    if (told.has(event.supplierId)) continue;
    told.add(event.supplierId);
    await afterRecord(trx, event);
  }
}

/**
 * Runs inside the event's transaction, after its insert; a failure fails the change like the insert
 * would. It must depend only on the transaction and the event's supplier (see recordEvents).
 */
export type EventRecordedHook = ((trx: Transaction<Database>, event: NewEvent) => Promise<void>) & {
  /** True when the hook would surely do nothing for this supplier's events now (no statement). */
  idleFor?: (supplierId: number) => boolean;
};
let afterRecord: EventRecordedHook | null = null;

/**
 * The webhooks' fan-out trigger (webhooks/webhook-fanout.ts) is set here once per process when the
 * queue opens, so that the many services calling recordEvent need no queue of their own. Without
 * it (a process that never opened the queue) events are still recorded, and the fan-out's
 * every-minute schedule picks them up.
 */
export function setEventRecordedHook(hook: EventRecordedHook | null): void {
  afterRecord = hook;
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
