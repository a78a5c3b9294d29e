import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Database } from '../../db/schema.ts';
import type { ForOrganisation, JobQueue } from '../../queue/queue.ts';
import { toEvent, type EventRow } from '../events/index.ts';
import { postWebhook, type AttemptResult, type DeliveryAgents } from './webhook-http.ts';
import { signerFor, type Signer } from './webhook-signature.ts';
import * as repo from './webhooks.repository.ts';

// One delivery job = one HTTP attempt of one event to one endpoint (D13). The job makes the attempt
// outside any transaction, then, in one transaction, logs it and decides what follows: nothing
// (2xx), disable the endpoint (410), or the next attempt as a new job that starts later. Its state
// is only in the store: a killed worker's job expires and runs again; the log's unique
// (endpoint, event, attempt) tells it the attempt was already made, so it only redoes the follow-up,
// and the follow-up job's fixed id makes a second copy of it a no-op.

export const DELIVERY_QUEUE = 'webhook_delivery';

/** Attempts in all: the first, then 8 retries, 4 times further apart each (docs/events.md). */
export const MAX_ATTEMPTS = 9;
export const BACKOFF_FACTOR = 4;

/** The delay before attempt `attempt + 1`: base, 4·base, 16·base, … (5 s, 20 s, 80 s … with the default base). */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return baseMs * BACKOFF_FACTOR ** (attempt - 1);
}

/**
 * `org` is the endpoint's organisation and `lane` the endpoint: the delivery workers are shared out
 * between organisations, and an organisation's share between its endpoints, so one whose receivers
 * are slow or never answer cannot hold them all, nor one endpoint its organisation's other endpoints'
 * (a job queued before they were kept has none, and shares with the others that have none).
 */
export interface DeliveryJob extends ForOrganisation { endpoint_id: string; event_id: number; attempt: number }

/** The job of an event's first attempt to an endpoint (the later ones copy it: followUp). */
export function firstAttempt(endpoint: { id: string; organisation_id: number }, eventId: number): DeliveryJob {
  return { endpoint_id: endpoint.id, event_id: eventId, attempt: 1, org: endpoint.organisation_id, lane: endpoint.id };
}

export interface DeliveryDeps {
  db: Kysely<Database>;
  queue: JobQueue;
  retryBaseMs: number;
  allowPrivateNetworks: boolean;
  /** The connection pools the attempts go through (webhook-http.ts). */
  agents: DeliveryAgents;
  /** An attempt's signing time (and which secrets sign it), a retry's due time, a 410's recorded time. */
  clock: Clock;
  /** A refused address is a configuration problem of the endpoint: it is logged at warn, not only in the endpoint's log. */
  logger: { warn(obj: object, msg: string): void };
}

/** The queue's own retries only cover a worker that died or a store that was away, never the HTTP schedule. */
export const DELIVERY_JOB_POLICY = { retryLimit: 10, retryDelay: 5, retryBackoff: true, expireInSeconds: 30 } as const;

export type DeliveryOutcome = 'delivered' | 'retry_scheduled' | 'gave_up' | 'endpoint_disabled' | 'dropped';

/** One job's attempt, made by deliverBatch. */
export async function deliverOnce(deps: DeliveryDeps, job: DeliveryJob): Promise<DeliveryOutcome> {
  return (await deliverBatch(deps, [job]))[0]!;
}

/**
 * The jobs a worker took together: their endpoints, earlier attempts and events are read in one query
 * each, the HTTP attempts run side by side, and every attempt is logged, with what follows it, in
 * one transaction, or one statement when every attempt delivered (a store failure fails the batch;
 * the queue runs it again and the attempts logged are not repeated). Outcomes in the jobs' order.
 */
export async function deliverBatch(deps: DeliveryDeps, jobs: DeliveryJob[]): Promise<DeliveryOutcome[]> {
  const { db } = deps;
  if (jobs.length === 0) return [];
  const endpoints = new Map((await repo.findEndpoints(db, [...new Set(jobs.map((j) => j.endpoint_id))])).map((e) => [e.id, e]));
  // Deleted or disabled meanwhile (another event's 410): nothing more goes to it.
  const live = jobs.filter((job) => endpoints.get(job.endpoint_id)?.enabled === true);
  const logged = new Map((await repo.findDeliveries(db, live)).map((d) => [attemptKey(d), d.status_code]));
  const events = new Map((await repo.findEvents(db, [...new Set(live.map((j) => j.event_id))])).map((e) => [Number(e.id), e]));
  const signers = new Map<string, Signer>();
  const signerOf = (secret: string) => signers.get(secret) ?? signers.set(secret, signerFor(secret)).get(secret)!;
  const attempts = await Promise.all(live.map(async (job) => {
    if (logged.has(attemptKey(job))) return { job, status: logged.get(attemptKey(job)) ?? null, log: null };
    const row = events.get(job.event_id);
    if (!row) return null; // older than the retention period
    const at = deps.clock.now();
    const result = await attempt(deps, endpoints.get(job.endpoint_id)!, row, signerOf, at);
    if (result.refused) {
      deps.logger.warn({ endpoint_id: job.endpoint_id, event_id: job.event_id, attempt: job.attempt, reason: result.error },
        'webhook delivery refused: the endpoint\'s address is not one the service may deliver to');
    }
    const log = {
      endpoint_id: job.endpoint_id, event_id: job.event_id, event_type: row.type, attempt: job.attempt,
      status_code: result.status, latency_ms: result.latencyMs, error: result.error ?? (isSuccess(result.status) ? null : `HTTP ${result.status}`), at,
    };
    return { job, status: result.status, log };
  }));
  const outcomes = new Map<DeliveryJob, DeliveryOutcome>();
  const made = attempts.filter((a) => a !== null);
  const logs = made.flatMap((a) => (a.log ? [a.log] : []));
  if (made.every((a) => isSuccess(a.status))) {
    // Nothing follows a delivered attempt: the log's one statement is atomic by itself, without
    // the round trips of BEGIN and COMMIT.
    await repo.logDeliveries(db, logs);
    for (const a of made) outcomes.set(a.job, 'delivered');
  } else {
    await db.transaction().execute(async (trx) => {
      await repo.logDeliveries(trx, logs);
      for (const a of made) outcomes.set(a.job, await followUp(deps, trx, a.job, a.status));
    });
  }
  return jobs.map((job) => outcomes.get(job) ?? 'dropped');
}

const attemptKey = (d: { endpoint_id: string; event_id: number | string; attempt: number }) => `${d.endpoint_id}:${d.event_id}:${d.attempt}`;

function attempt(deps: DeliveryDeps, endpoint: repo.EndpointRow, row: repo.DeliverableEvent, signerOf: (secret: string) => Signer, now: Date): Promise<AttemptResult> {
  const body = bodyOf(row);
  const msgId = String(row.id);
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'account-migration-import-webhooks/1',
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signingSecrets(endpoint, now).map((secret) => signerOf(secret)(msgId, timestamp, body)).join(' '),
  };
  return postWebhook(endpoint.url, body, headers, { allowPrivateNetworks: deps.allowPrivateNetworks, agents: deps.agents });
}

/**
 * The secrets a delivery made now is signed with: the endpoint's, and for 24 hours after a rotation
 * the one it replaced. Standard Webhooks puts several `v1,…` signatures in one header, space
 * separated, and a receiver accepts the delivery when any of them verifies with its secret.
 */
export function signingSecrets(endpoint: Pick<repo.EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>, now: Date): string[] {
  const { previous_secret: previous, previous_secret_expires_at: until } = endpoint;
  return previous !== null && until !== null && until > now ? [endpoint.secret, previous] : [endpoint.secret];
}

/** The event exactly as the feed shows it; a test ping has no supplier (null). */
function bodyOf(row: repo.DeliverableEvent): string {
  const { import_supplier: supplier, ...rest } = row;
  return JSON.stringify({ ...toEvent({ ...rest, import_supplier: '' } satisfies EventRow), import_supplier: supplier });
}

const isSuccess = (status: number | null) => status !== null && status >= 200 && status < 300;

async function followUp(deps: DeliveryDeps, trx: Transaction<Database>, job: DeliveryJob, status: number | null): Promise<DeliveryOutcome> {
  if (isSuccess(status)) return 'delivered';
  if (status === 410) {
    await repo.disableEndpoint(trx, job.endpoint_id, `the endpoint answered 410 Gone to event ${job.event_id} at ${deps.clock.now().toISOString()}`);
    return 'endpoint_disabled';
  }
  if (job.attempt >= MAX_ATTEMPTS) return 'gave_up';
  const next: DeliveryJob = { ...job, attempt: job.attempt + 1 };
  await deps.queue.send(DELIVERY_QUEUE, next, {
    trx, id: jobIdOf(next), startAfter: new Date(deps.clock.nowMs() + retryDelayMs(job.attempt, deps.retryBaseMs)), ...DELIVERY_JOB_POLICY,
  });
  return 'retry_scheduled';
}

/** A UUID fixed by (endpoint, event, attempt): the same follow-up sent twice is inserted once. */
export function jobIdOf(job: DeliveryJob): string {
  const hex = createHash('sha256').update(`${job.endpoint_id}:${job.event_id}:${job.attempt}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
