import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { Database, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.ts';
import { committedBeforeEveryRunning, type EventRow, type FeedPosition } from '../events/index.ts';

// The webhook tables (migration 006). Free functions, executor first.
type Db = Kysely<Database> | Transaction<Database>;

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

export interface NewEndpoint {
  id: string; organisation_id: number; url: string; event_types: string[] | null; secret: string; description?: string | null;
}

export function insertEndpoint(db: Db, row: NewEndpoint): Promise<EndpointRow> {
  return db.insertInto('webhook_endpoints').values(row).returningAll().executeTakeFirstOrThrow();
}

export function endpointsOf(db: Db, organisationId: number): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('organisation_id', '=', organisationId)
    .orderBy('created_at').orderBy('id').execute();
}

/** An endpoint by id; with an organisation, only that organisation's (another's is as unknown). */
export function findEndpoint(db: Db, id: string, organisationId?: number): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id)
    .$if(organisationId !== undefined, (q) => q.where('organisation_id', '=', organisationId!)).executeTakeFirst();
}

export async function deleteEndpoint(db: Db, id: string, organisationId?: number): Promise<boolean> {
  const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id)
    .$if(organisationId !== undefined, (q) => q.where('organisation_id', '=', organisationId!)).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export type EndpointChanges = Partial<Pick<EndpointRow, 'url' | 'event_types' | 'description'>>;

export async function updateEndpoint(db: Db, id: string, changes: EndpointChanges): Promise<void> {
  if (Object.keys(changes).length === 0) return;
  await db.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
}

/**
 * A new secret; the one it replaces signs beside it until `previousUntil` (the stored expiry is
 * compared with each delivery's time). A second rotation within the overlap drops the oldest secret.
 */
/** The endpoint with its new secret; undefined when it is gone (deleted since it was read). */
export function rotateSecret(db: Db, id: string, secret: string, previousUntil: Date): Promise<EndpointRow | undefined> {
  return db.updateTable('webhook_endpoints').set((eb) => ({
    previous_secret: eb.ref('secret'),
    previous_secret_expires_at: previousUntil,
    secret,
  })).where('id', '=', id).returningAll().executeTakeFirst();
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

/** An endpoint's attempts, newest first, from before the attempt `beforeId` (keyset). */
export function deliveriesOf(db: Db, endpointId: string, limit: number, beforeId: number | null = null): Promise<DeliveryRow[]> {
  return db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId)
    .$if(beforeId !== null, (q) => q.where('id', '<', beforeId!))
    .orderBy('id', 'desc').limit(limit).execute();
}

export function findEndpoints(db: Db, ids: string[]): Promise<EndpointRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('webhook_endpoints').selectAll().where('id', 'in', ids).execute();
}

/** The attempts among these already logged (jobs that ran again after a crash). */
export function findDeliveries(db: Db, attempts: Array<{ endpoint_id: string; event_id: number; attempt: number }>): Promise<DeliveryRow[]> {
  if (attempts.length === 0) return Promise.resolve([]);
  return db.selectFrom('webhook_deliveries').selectAll()
    .where(sql<boolean>`(endpoint_id, event_id, attempt) IN (${sql.join(attempts.map((a) => sql`(${a.endpoint_id}, ${a.event_id}::bigint, ${a.attempt}::int)`))})`)
    .execute();
}

/**
 * Logs attempts; one logged already (a job that ran again after a crash) is kept as it was. An
 * attempt to an endpoint deleted since it was made is not logged (the endpoint's log went with it):
 * each endpoint row is locked against deletion for the insert, so one deleted by a transaction
 * that committed meanwhile is skipped instead of failing the whole batch on the foreign key.
 */
/** Attempts to log; `at` is when the attempt was made (a batch is logged when its slowest attempt ends). */
export async function logDeliveries(db: Db, rows: Array<Omit<DeliveryRow, 'id'>>): Promise<void> {
  if (rows.length === 0) return;
  // The rows read through the table's own row type (id is left to its default).
  await sql`WITH r AS (SELECT * FROM jsonb_populate_recordset(NULL::webhook_deliveries, ${JSON.stringify(rows)}::jsonb)),
    live AS (SELECT e.id FROM webhook_endpoints e WHERE e.id IN (SELECT endpoint_id FROM r) FOR KEY SHARE)
    INSERT INTO webhook_deliveries (endpoint_id, event_id, event_type, attempt, status_code, latency_ms, error, at)
    SELECT r.endpoint_id, r.event_id, r.event_type, r.attempt, r.status_code, r.latency_ms, r.error, r.at
    FROM r WHERE r.endpoint_id IN (SELECT id FROM live)
    ON CONFLICT (endpoint_id, event_id, attempt) DO NOTHING`.execute(db);
}

/** An event to deliver: as the feed shows it, or a test ping (no supplier). */
export type DeliverableEvent = Omit<EventRow, 'import_supplier'> & { import_supplier: string | null };

/** Events as the feed shows them, and pings, by id (one removed by retention is missing). */
export function findEvents(db: Db, ids: number[]): Promise<DeliverableEvent[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('events as e').leftJoin('import_suppliers as s', 's.id', 'e.supplier_id')
    .select(['e.id', sql<string>`e.xid::text`.as('xid'), 'e.type', 'e.external_account_number', 'e.data', 'e.created_at', 's.code as import_supplier'])
    .where('e.id', 'in', ids).execute();
}

export async function deleteDeliveriesBefore(db: Db, before: Date, batch: number): Promise<number> {
  const result = await db.deleteFrom('webhook_deliveries')
    .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id').where('at', '<', before).limit(batch))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
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

/**
 * The next events of every supplier past the cursor, in feed order (the feed's commit horizon
 * applies), and whether any other transaction was running when they were read: one statement, so
 * both describe the same snapshot. A transaction running then may still commit events (or hold back
 * committed ones) that this read could not see.
 */
export async function eventsPast(trx: Transaction<Database>, after: FeedPosition | null, limit: number): Promise<{ events: FanoutEvent[]; othersRunning: boolean }> {
  const past = after ? sql`AND (e.xid, e.id) > (${after.xid}::xid8, ${after.id})` : sql``;
  const { rows } = await sql<FanoutEvent & { others_running: boolean }>`
    SELECT r.others_running, e.id, e.xid, e.type, e.created_at, e.organisation_id
    FROM (SELECT EXISTS (SELECT 1 FROM pg_snapshot_xip(pg_current_snapshot()) AS x
                         WHERE x IS DISTINCT FROM pg_current_xact_id_if_assigned()) AS others_running) AS r
    LEFT JOIN LATERAL (
      SELECT e.id, e.xid::text AS xid, e.type, e.created_at, s.organisation_id
      FROM events AS e INNER JOIN import_suppliers AS s ON s.id = e.supplier_id
      WHERE ${committedBeforeEveryRunning} ${past}
      ORDER BY e.xid, e.id LIMIT ${limit}
    ) AS e ON true`.execute(trx);
  const events = rows.filter((row) => row.id !== null)
    .map(({ id, xid, type, created_at, organisation_id }) => ({ id, xid, type, created_at, organisation_id }));
  return { events, othersRunning: rows[0]?.others_running === true };
}

export function enabledEndpointsOf(trx: Db, organisationIds: number[]): Promise<EndpointRow[]> {
  if (organisationIds.length === 0) return Promise.resolve([]);
  return trx.selectFrom('webhook_endpoints').selectAll()
    .where('organisation_id', 'in', organisationIds).where('enabled', '=', true).execute();
}
