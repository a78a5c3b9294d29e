import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { findOrganisationByName } from '../admin/admin.repository.ts';
import { AdminError } from '../admin/admin-error.ts';
import { EVENT_TYPES, type EventType } from '../events/event-types.ts';
import { forgetEndpointLookups } from './webhook-fanout.ts';
import * as repo from './webhooks.repository.ts';

// The operator side of webhooks (D13), called by import-admin: create, list, enable, disable, delete,
// and the log of an endpoint's deliveries. Failures are AdminError with a one-line reason, like the other commands.
type Db = Kysely<Database>;

/** How many delivery attempts `webhook deliveries` shows, newest first. */
export const DELIVERIES_SHOWN = 100;

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

/** The URL rule: absolute http(s), nothing else (file:, gopher:… have no business here). */
export function checkWebhookUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AdminError('invalid_argument', `--url must be an absolute http or https URL, got "${url}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new AdminError('invalid_argument', `--url must be an http or https URL, got "${url}"`);
  }
  if (parsed.username || parsed.password) throw new AdminError('invalid_argument', '--url must not carry credentials');
  if (url.length > 2000) throw new AdminError('invalid_argument', '--url is longer than 2000 characters');
  return parsed.toString();
}

/** `--events a,b`: each must be one of the closed list; undefined means every type. */
export function parseEventTypes(list: string | undefined): EventType[] | null {
  if (list === undefined) return null;
  const types = [...new Set(list.split(',').map((t) => t.trim()).filter((t) => t !== ''))];
  if (types.length === 0) throw new AdminError('invalid_argument', '--events must name at least one event type');
  const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length > 0) {
    throw new AdminError('invalid_argument', `unknown event type "${unknown[0]}"; the types are ${EVENT_TYPES.join(', ')}`);
  }
  return types as EventType[];
}

/** A Standard Webhooks secret: `whsec_` and base64 of 32 random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export async function createWebhook(db: Db, organisation: string, url: string, events?: string)
  : Promise<{ webhook: string; url: string; events: EventType[] | null; secret: string }> {
  const checkedUrl = checkWebhookUrl(url);
  const types = parseEventTypes(events);
  const org = await findOrganisationByName(db, organisation);
  if (!org) throw new AdminError('not_found', `no organisation named "${organisation}"`);
  const row = await repo.insertEndpoint(db, {
    id: `wh_${randomBytes(8).toString('hex')}`, organisation_id: org.id, url: checkedUrl, event_types: types, secret: generateSecret(),
  });
  forgetEndpointLookups();
  return { webhook: row.id, url: row.url, events: types, secret: row.secret };
}

export async function listWebhooks(db: Db, organisation: string): Promise<{ organisation: string; webhooks: WebhookView[] }> {
  const org = await findOrganisationByName(db, organisation);
  if (!org) throw new AdminError('not_found', `no organisation named "${organisation}"`);
  const rows = await repo.endpointsOf(db, org.id);
  return { organisation: org.name, webhooks: rows.map(toView) };
}

export async function deleteWebhook(db: Db, id: string): Promise<{ deleted: string }> {
  if (!(await repo.deleteEndpoint(db, id))) throw new AdminError('not_found', `no webhook "${id}"`);
  return { deleted: id };
}

/** The longest --reason a disable takes (it is shown by `list`). */
export const REASON_MAX_LENGTH = 500;

export function checkDisableReason(reason: string | undefined): void {
  if (reason === undefined) return;
  if (reason.trim() === '') throw new AdminError('invalid_argument', '--reason must not be empty');
  if (reason.length > REASON_MAX_LENGTH) throw new AdminError('invalid_argument', `--reason is longer than ${REASON_MAX_LENGTH} characters`);
}

/**
 * Enables an endpoint again (disabled by a 410 or by an operator): it receives the events recorded
 * from now on, not those recorded while it was disabled (the feed has them). Enabling an enabled
 * endpoint changes nothing. Returns the endpoint as `list` shows it.
 */
export async function enableWebhook(db: Db, id: string): Promise<WebhookView> {
  const row = (await repo.enableEndpoint(db, id)) ?? (await repo.findEndpoint(db, id));
  if (!row) throw new AdminError('not_found', `no webhook "${id}"`);
  forgetEndpointLookups();
  return toView(row);
}

/**
 * Stops deliveries to an endpoint, keeping it (its secret, filter and log): pending retries are
 * dropped when they come up. Disabling a disabled endpoint keeps its first reason.
 */
export async function disableWebhook(db: Db, id: string, reason?: string): Promise<WebhookView> {
  checkDisableReason(reason);
  await repo.disableEndpoint(db, id, reason?.trim() ?? `disabled by an operator at ${new Date().toISOString()}`);
  const row = await repo.findEndpoint(db, id);
  if (!row) throw new AdminError('not_found', `no webhook "${id}"`);
  return toView(row);
}

export async function webhookDeliveries(db: Db, id: string): Promise<{ webhook: string; deliveries: DeliveryView[] }> {
  const endpoint = await repo.findEndpoint(db, id);
  if (!endpoint) throw new AdminError('not_found', `no webhook "${id}"`);
  const rows = await repo.recentDeliveries(db, id, DELIVERIES_SHOWN);
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
