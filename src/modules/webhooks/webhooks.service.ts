import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { AppError } from '../../core/errors.ts';
import type { Database } from '../../db/schema.ts';
import { findOrganisationByName } from '../admin/index.ts';
import { EVENT_TYPES, type EventType } from '../events/index.ts';
import * as repo from './webhooks.repository.ts';

// Webhook endpoints (D13): the operations import-admin and the API share (the URL rule, create, enable,
// disable), then import-admin's commands: create, list, enable, disable, delete, and the log of an
// endpoint's deliveries. Their failures are AppError with a one-line reason, like the other commands
// (a rule of one option names it as `attr`, which import-admin words as its flag); the API's side
// (webhook-endpoints.service.ts) states the same rules in its own words.
type Db = Kysely<Database>;

export interface WebhookView {
  webhook: string;
  url: string;
  /** null: every event type. */
  events: EventType[] | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
}

export interface DeliveryView {
  event: string;
  attempt: number;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  at: string;
}

/** Why a URL is not a webhook URL: the rule (absolute http(s), not port 0, no credentials, at most 2000 characters) for the CLI and the API. */
export type WebhookUrlProblem = 'not_a_url' | 'not_http' | 'port_zero' | 'credentials' | 'too_long';

export function webhookUrlProblem(url: string): { url: string; problem: null } | { url: null; problem: WebhookUrlProblem } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url: null, problem: 'not_a_url' };
  }
  // file:, gopher:, ftp:… have no business here.
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { url: null, problem: 'not_http' };
  // The URL parser refuses ports above 65535 but takes 0, which no connection can be made to.
  if (parsed.port === '0') return { url: null, problem: 'port_zero' };
  if (parsed.username || parsed.password) return { url: null, problem: 'credentials' };
  if (url.length > URL_MAX_LENGTH) return { url: null, problem: 'too_long' };
  return { url: parsed.toString(), problem: null };
}

export const URL_MAX_LENGTH = 2000;

/** The URL rule as import-admin states it. */
export function checkWebhookUrl(url: string): string {
  const checked = webhookUrlProblem(url);
  switch (checked.problem) {
    case null: return checked.url;
    case 'not_a_url': throw AppError.field('invalid', `must be an absolute http or https URL, got "${url}"`, 'url');
    case 'not_http': throw AppError.field('invalid', `must be an http or https URL, got "${url}"`, 'url');
    case 'port_zero': throw AppError.field('invalid', `must have a port from 1 to 65535 (or none), got "${url}"`, 'url');
    case 'credentials': throw AppError.field('invalid', 'must not carry credentials', 'url');
    case 'too_long': throw AppError.field('invalid', `is longer than ${URL_MAX_LENGTH} characters`, 'url');
  }
}

/** `--events a,b`: each must be one of the closed list; undefined means every type. */
export function parseEventTypes(list: string | undefined): EventType[] | null {
  if (list === undefined) return null;
  const types = [...new Set(list.split(',').map((t) => t.trim()).filter((t) => t !== ''))];
  if (types.length === 0) throw AppError.field('invalid', 'must name at least one event type', 'events');
  const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) {
    throw new AppError('invalid', `unknown event type "${unknown[0]}"; the types are ${EVENT_TYPES.join(', ')}`);
  }
  return types as EventType[];
}

/** A Standard Webhooks secret: `whsec_` and base64 of 32 random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

// --- shared by import-admin (any organisation's endpoint, by id) and the API (the caller's organisation's) ---

// An endpoint created or enabled here receives the events recorded from then on, whichever process
// records them: the events table's trigger looks at the endpoints in the statement (webhook-fanout.ts).

/** Creates an endpoint with a fresh secret; it receives the events recorded from now on. The URL and types are checked already. */
export function addEndpoint(db: Db, organisationId: number, fields: { url: string; events: EventType[] | null; description?: string | null })
  : Promise<repo.EndpointRow> {
  return repo.insertEndpoint(db, {
    id: `wh_${randomBytes(8).toString('hex')}`, organisation_id: organisationId, url: fields.url, event_types: fields.events,
    secret: generateSecret(), description: fields.description ?? null,
  });
}

/** Enables an endpoint again (a no-op when enabled); undefined when there is no such endpoint. */
export async function enableEndpoint(db: Db, id: string): Promise<repo.EndpointRow | undefined> {
  return (await repo.enableEndpoint(db, id)) ?? (await repo.findEndpoint(db, id));
}

/** Disables an endpoint, keeping the first reason if it is disabled already; undefined when there is no such endpoint. */
export async function disableEndpoint(db: Db, id: string, reason: string): Promise<repo.EndpointRow | undefined> {
  await repo.disableEndpoint(db, id, reason);
  return repo.findEndpoint(db, id);
}

// --- import-admin ---

export async function createWebhook(db: Db, organisation: string, url: string, events?: string)
  : Promise<{ webhook: string; url: string; events: EventType[] | null; secret: string }> {
  const checkedUrl = checkWebhookUrl(url);
  const types = parseEventTypes(events);
  const org = await findOrganisationByName(db, organisation);
  if (!org) throw new AppError('not_found', `no organisation named "${organisation}"`);
  const row = await addEndpoint(db, org.id, { url: checkedUrl, events: types });
  return { webhook: row.id, url: row.url, events: types, secret: row.secret };
}

export async function listWebhooks(db: Db, organisation: string): Promise<{ organisation: string; webhooks: WebhookView[] }> {
  const org = await findOrganisationByName(db, organisation);
  if (!org) throw new AppError('not_found', `no organisation named "${organisation}"`);
  const rows = await repo.endpointsOf(db, org.id);
  return { organisation: org.name, webhooks: rows.map(toView) };
}

export async function deleteWebhook(db: Db, id: string): Promise<{ deleted: string }> {
  if (!(await repo.deleteEndpoint(db, id))) throw new AppError('not_found', `no webhook "${id}"`);
  return { deleted: id };
}

/** The longest --reason a disable takes (it is shown by `list`). */
export const REASON_MAX_LENGTH = 500;

export function checkDisableReason(reason: string | undefined): void {
  if (reason === undefined) return;
  if (reason.trim() === '') throw AppError.field('invalid', 'must not be empty', 'reason');
  if (reason.length > REASON_MAX_LENGTH) throw AppError.field('invalid', `is longer than ${REASON_MAX_LENGTH} characters`, 'reason');
}

/**
 * Enables an endpoint again (disabled by a 410 or by an operator): it receives the events recorded
 * from now on, not those recorded while it was disabled (the feed has them). Enabling an enabled
 * endpoint changes nothing. Returns the endpoint as `list` shows it.
 */
export async function enableWebhook(db: Db, id: string): Promise<WebhookView> {
  const row = await enableEndpoint(db, id);
  if (!row) throw new AppError('not_found', `no webhook "${id}"`);
  return toView(row);
}

/**
 * Stops deliveries to an endpoint, keeping it (its secret, filter and log): pending retries are
 * dropped when they come up. Disabling a disabled endpoint keeps its first reason. `at`: the time the
 * reason given by default names (the CLI's clock).
 */
export async function disableWebhook(db: Db, id: string, reason: string | undefined, at: Date): Promise<WebhookView> {
  checkDisableReason(reason);
  const row = await disableEndpoint(db, id, reason?.trim() ?? `disabled by an operator at ${at.toISOString()}`);
  if (!row) throw new AppError('not_found', `no webhook "${id}"`);
  return toView(row);
}

/** The endpoint's latest `shown` delivery attempts, newest first. */
export async function webhookDeliveries(db: Db, id: string, shown: number): Promise<{ webhook: string; deliveries: DeliveryView[] }> {
  const endpoint = await repo.findEndpoint(db, id);
  if (!endpoint) throw new AppError('not_found', `no webhook "${id}"`);
  const rows = await repo.deliveriesOf(db, id, shown);
  return {
    webhook: id,
    deliveries: rows.map((r) => ({
      event: String(r.event_id), attempt: r.attempt, status_code: r.status_code, latency_ms: r.latency_ms, error: r.error, at: r.at.toISOString(),
    })),
  };
}

function toView(row: repo.EndpointRow): WebhookView {
  return {
    webhook: row.id, url: row.url, events: row.event_types as EventType[] | null,
    enabled: row.enabled, disabled_reason: row.disabled_reason, created_at: row.created_at.toISOString(),
  };
}
