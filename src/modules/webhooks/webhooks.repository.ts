import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { Database, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';
import { committedBeforeEveryRunning, type EventRow, type FeedPosition } from '../events/events.repository.ts';

// The webhook tables (migration 006). Free functions, executor first.
type Db = Kysely<Database> | Transaction<Database>;

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

export function insertEndpoint(db: Db, row: { id: string; organisation_id: number; url: string; event_types: string[] | null; secret: string }): Promise<EndpointRow> {
  return db.insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
}

export function endpointsOf(db: Db, organisationId: number): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('organisation_id', '=', organisationId)
    .orderBy('created_at').orderBy('id').execute();
}

export function findEndpoint(db: Db, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deleteEndpoint(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function disableEndpoint(db: Db, id: string, reason: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ enabled: false, disabled_reason: reason })
    .where('id', '=', id).where('enabled', '=', true).execute();
}

/** Enables a disabled endpoint from now on; undefined when it is unknown or enabled already (then nothing changes). */
export function enableEndpoint(db: Db, id: string): Promise<EndpointRow | undefined> {
  return db.updateTable('webhook_endpoints').set({ enabled: true, disabled_reason: null, enabled_at: sql<Date>`now()` })
    .where('id', '=', id).where('enabled', '=', false).returningAll().executeTakeFirst();
}

/** Does the supplier's organisation have an enabled endpoint? (Decides whether an event triggers a fan-out.) */
export async function supplierHasEndpoint(trx: Db, supplierId: number): Promise<boolean> {
  const row = await trx.selectFrom('webhook_endpoints as w')
    .innerJoin('import_suppliers as s', 's.organisation_id', 'w.organisation_id')
    .select('w.id').where('s.id', '=', supplierId).where('w.enabled', '=', true).limit(1).executeTakeFirst();
  return row !== undefined;
}

export function recentDeliveries(db: Db, endpointId: string, limit: number): Promise<DeliveryRow[]> {
  return db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId)
    .orderBy('id', 'desc').limit(limit).execute();
}

export function findDelivery(db: Db, endpointId: string, eventId: number, attempt: number): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll()
    .where('endpoint_id', '=', endpointId).where('event_id', '=', eventId).where('attempt', '=', attempt).executeTakeFirst();
}

/** Logs an attempt; false when that attempt was logged already (a job that ran again after a crash). */
export async function logDelivery(db: Db, row: Omit<DeliveryRow, 'id' | 'at'>): Promise<boolean> {
  const inserted = await db.insertInto('webhook_deliveries').values(row)
    .onConflict((oc) => oc.columns(['endpoint_id', 'event_id', 'attempt']).doNothing())
    .returning('id').executeTakeFirst();
  return inserted !== undefined;
}

export async function deleteDeliveriesBefore(db: Db, before: Date, batch: number): Promise<number> {
  const result = await db.deleteFrom('webhook_deliveries')
    .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id').where('at', '<', before).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** One event as the feed shows it, by id (null once retention removed it). */
export function findEvent(db: Db, id: number): Promise<EventRow | undefined> {
  return db.selectFrom('events as e').innerJoin('import_suppliers as s', 's.id', 'e.supplier_id')
    .select(['e.id', sql<string>`e.xid::text`.as('xid'), 'e.type', 'e.external_account_number', 'e.data', 'e.created_at', 's.code as import_supplier'])
    .where('e.id', '=', id).executeTakeFirst();
}

// --- the fan-out ---

/** Locks the fan-out cursor for the transaction: fan-outs on several instances take turns. */
export async function lockCursor(trx: Transaction<Database>): Promise<FeedPosition | null> {
  const row = await trx.selectFrom('webhook_fanout_cursor').select([sql<string | null>`xid::text`.as('xid'), 'event_id'])
    .forUpdate().executeTakeFirstOrThrow();
  return row.xid !== null && row.event_id !== null ? { xid: row.xid, id: row.event_id } : null;
}

export async function moveCursor(trx: Transaction<Database>, to: FeedPosition): Promise<void> {
  await trx.updateTable('webhook_fanout_cursor').set({ xid: sql`${to.xid}::xid8`, event_id: to.id }).execute();
}

export interface FanoutEvent { id: number; xid: string; type: string; created_at: Date; organisation_id: number }

/** The next events of every supplier past the cursor, in feed order (the feed's commit horizon applies). */
export function eventsPast(trx: Transaction<Database>, after: FeedPosition | null, limit: number): Promise<FanoutEvent[]> {
  let query = trx.selectFrom('events as e').innerJoin('import_suppliers as s', 's.id', 'e.supplier_id')
    .select(['e.id', sql<string>`e.xid::text`.as('xid'), 'e.type', 'e.created_at', 's.organisation_id'])
    .where(committedBeforeEveryRunning);
  if (after) query = query.where(sql<boolean>`(e.xid, e.id) > (${after.xid}::xid8, ${after.id})`);
  return query.orderBy('e.xid').orderBy('e.id').limit(limit).execute();
}

/** Are there committed events past the cursor that the horizon still holds back? */
export async function eventsHeldBack(db: Db, after: FeedPosition | null): Promise<boolean> {
  let query = db.selectFrom('events as e').select('e.id');
  if (after) query = query.where(sql<boolean>`(e.xid, e.id) > (${after.xid}::xid8, ${after.id})`);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}

export async function readCursor(db: Db): Promise<FeedPosition | null> {
  const row = await db.selectFrom('webhook_fanout_cursor').select([sql<string | null>`xid::text`.as('xid'), 'event_id']).executeTakeFirstOrThrow();
  return row.xid !== null && row.event_id !== null ? { xid: row.xid, id: row.event_id } : null;
}

export function enabledEndpointsOf(trx: Db, organisationIds: number[]): Promise<EndpointRow[]> {
  if (organisationIds.length === 0) return Promise.resolve([]);
  return trx.selectFrom('webhook_endpoints').selectAll()
    .where('organisation_id', 'in', organisationIds).where('enabled', '=', true).execute();
}
