import type { Kysely } from 'kysely';
import type { Caller } from '../../core/caller.ts';
import type { Clock } from '../../core/clock.ts';
import { AppError } from '../../core/errors.ts';
import { badCursor, cursorKey, encodeCursor } from '../../core/cursor.ts';
import type { Database } from '../../db/schema.ts';
import type { JobQueue } from '../../queue/queue.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import { insertPing, type EventType } from '../events/index.ts';
import { DELIVERY_JOB_POLICY, DELIVERY_QUEUE, firstAttempt, jobIdOf } from './webhook-delivery.ts';
import type {
  CreatedWebhookEndpoint, CreateWebhookEndpointBody, DeliveriesQuery, PingEvent, RotatedWebhookSecret, UpdateWebhookEndpointBody,
  WebhookDelivery, WebhookEndpoint,
} from './webhook-endpoints.schemas.ts';
import { DEFAULT_DELIVERIES_PAGE_SIZE } from './webhook-endpoints.schemas.ts';
import { addressKind, hostRefusal } from './ssrf-guard.ts';
import * as webhooks from './webhooks.service.ts';
import * as repo from './webhooks.repository.ts';

// The caller's organisation's webhook endpoints over the API: the operations import-admin uses
// (webhooks.service.ts), scoped to the caller's organisation (another's endpoint is as unknown: 404),
// with the API's errors. A URL is also refused when the service may not deliver to it.
type Db = Kysely<Database>;

/** How long a rotated-out secret goes on signing beside the new one. */
export const ROTATION_OVERLAP_HOURS = 24;

export interface EndpointsDeps {
  db: Db;
  queue: JobQueue;
  allowPrivateNetworks: boolean;
  clock: Clock;
}

export async function createEndpoint(deps: EndpointsDeps, caller: Caller, body: CreateWebhookEndpointBody): Promise<CreatedWebhookEndpoint> {
  const url = await checkUrl(deps, body.url);
  const row = await webhooks.addEndpoint(deps.db, caller.organisationId, { url, events: body.events ?? null, description: body.description ?? null });
  return { ...toEndpoint(row), secret: row.secret };
}

export async function listEndpoints(db: Db, caller: Caller): Promise<WebhookEndpoint[]> {
  return (await repo.endpointsOf(db, caller.organisationId)).map(toEndpoint);
}

export async function getEndpoint(db: Db, caller: Caller, id: string): Promise<WebhookEndpoint> {
  return toEndpoint(await ownEndpoint(db, caller, id));
}

export async function updateEndpoint(deps: EndpointsDeps, caller: Caller, id: string, body: UpdateWebhookEndpointBody): Promise<WebhookEndpoint> {
  const { db } = deps;
  await ownEndpoint(db, caller, id);
  const changes: repo.EndpointChanges = {};
  if (body.url !== undefined) changes.url = await checkUrl(deps, body.url);
  if (body.events !== undefined) changes.event_types = body.events;
  if (body.description !== undefined) changes.description = body.description;
  await repo.updateEndpoint(db, id, changes);
  if (body.enabled === true) await webhooks.enableEndpoint(db, id);
  if (body.enabled === false) await webhooks.disableEndpoint(db, id, `disabled over the API at ${deps.clock.now().toISOString()}`);
  // An endpoint deleted meanwhile (another request) is as unknown.
  return toEndpoint(await ownEndpoint(db, caller, id));
}

export async function deleteEndpoint(db: Db, caller: Caller, id: string): Promise<void> {
  if (!(await repo.deleteEndpoint(db, id, caller.organisationId))) throw notFound(id);
}

export async function rotateSecret({ db, clock }: EndpointsDeps, caller: Caller, id: string): Promise<RotatedWebhookSecret> {
  await ownEndpoint(db, caller, id);
  // The old secret's end, on the clock each delivery's signing time is read from (webhook-delivery.ts).
  const until = new Date(clock.nowMs() + ROTATION_OVERLAP_HOURS * 3_600_000);
  const row = await repo.rotateSecret(db, id, webhooks.generateSecret(), until);
  // Deleted between the look and the update (a DELETE racing the rotation): as unknown as after it.
  if (!row) throw notFound(id);
  return { ...toEndpoint(row), secret: row.secret, previous_secret_expires_at: utcSeconds(row.previous_secret_expires_at!) };
}

/**
 * A `ping` event delivered to this endpoint only, whatever its event filter: written with its
 * delivery job in one transaction, then sent by the delivery workers like any event (signed,
 * retried, in the endpoint's log). A disabled endpoint is sent none: refused, rather than a ping
 * queued that would never go.
 */
export async function sendPing(deps: EndpointsDeps, caller: Caller, id: string): Promise<PingEvent> {
  const endpoint = await ownEndpoint(deps.db, caller, id);
  if (!endpoint.enabled) {
    throw new AppError('webhook_endpoint_disabled',
      `Webhook endpoint "${id}" is disabled (${endpoint.disabled_reason ?? 'no reason given'}): enable it (PATCH "enabled": true) to send it a ping.`);
  }
  const ping = await deps.db.transaction().execute(async (trx) => {
    const event = await insertPing(trx);
    const job = firstAttempt({ id, organisation_id: caller.organisationId }, event.id);
    await deps.queue.send(DELIVERY_QUEUE, job, { trx, id: jobIdOf(job), ...DELIVERY_JOB_POLICY });
    return event;
  });
  return { id: String(ping.id), type: 'ping', created_at: utcSeconds(ping.created_at), import_supplier: null, external_account_number: null, data: {} };
}

/** One page of the endpoint's attempts, newest first; the cursor names the last attempt shown. */
export async function deliveriesPage(db: Db, caller: Caller, id: string, query: DeliveriesQuery)
  : Promise<{ deliveries: WebhookDelivery[]; nextCursor: string | null }> {
  await ownEndpoint(db, caller, id);
  const size = query.page_size ?? DEFAULT_DELIVERIES_PAGE_SIZE;
  const before = query.cursor === undefined ? null : decodeDeliveryCursor(query.cursor);
  const rows = await repo.deliveriesOf(db, id, size + 1, before);
  const page = rows.slice(0, size);
  const deliveries = page.map((r) => ({
    event_id: String(r.event_id), event_type: r.event_type, attempt: r.attempt, status_code: r.status_code,
    latency_ms: r.latency_ms, error: r.error, at: utcSeconds(r.at),
  }));
  return { deliveries, nextCursor: rows.length > size ? encodeDeliveryCursor(page[page.length - 1]!.id) : null };
}

async function ownEndpoint(db: Db, caller: Caller, id: string): Promise<repo.EndpointRow> {
  const row = await repo.findEndpoint(db, id, caller.organisationId);
  if (!row) throw notFound(id);
  return row;
}

const notFound = (id: string) => new AppError('not_found', `No webhook endpoint "${id}".`);

/** The URL rule import-admin applies, and the address check deliveries make (unless private networks are allowed). */
async function checkUrl(deps: EndpointsDeps, url: string): Promise<string> {
  const checked = webhooks.webhookUrlProblem(url);
  switch (checked.problem) {
    case 'not_a_url': throw AppError.field('invalid', 'Enter an absolute http or https URL.', 'url');
    case 'not_http': throw notAllowed('Webhooks are delivered over http or https only.');
    case 'port_zero': throw AppError.field('invalid', 'Enter a port from 1 to 65535, or none for the scheme\'s default: port 0 cannot be delivered to.', 'url');
    case 'credentials': throw notAllowed('A webhook URL must not carry credentials.');
    case 'too_long': throw AppError.field('invalid', `Ensure this field has no more than ${webhooks.URL_MAX_LENGTH} characters.`, 'url');
    case null: break;
  }
  if (deps.allowPrivateNetworks) return checked.url;
  const refused = await hostRefusal(new URL(checked.url).hostname);
  if (refused) throw notAllowed(`Webhooks cannot be delivered to ${refused.which}: it is ${addressKind(refused.reason)}.`);
  return checked.url;
}

const notAllowed = (detail: string) => AppError.field('webhook_url_not_allowed', detail, 'url');

function toEndpoint(row: repo.EndpointRow): WebhookEndpoint {
  return {
    id: row.id, url: row.url, events: row.event_types as EventType[] | null, description: row.description,
    enabled: row.enabled, created_at: utcSeconds(row.created_at),
  };
}

function encodeDeliveryCursor(id: number): string {
  return encodeCursor([id]);
}

function decodeDeliveryCursor(cursor: string): number {
  const [id] = cursorKey(cursor, 1);
  if (Number.isSafeInteger(id) && (id as number) > 0) return id as number;
  throw badCursor();
}
