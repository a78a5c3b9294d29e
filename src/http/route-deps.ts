import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Clock } from '../core/clock.ts';
import type { Database } from '../db/schema.ts';
import type { StagingWriter } from '../modules/account-imports/index.ts';
import type { TokenService } from '../modules/auth/index.ts';
import type { Events } from '../modules/events/index.ts';
import type { WebhookFanout } from '../modules/webhooks/index.ts';
import type { JobQueue } from '../queue/queue.ts';

/** What every route plugin receives from buildApp as its options; no global decorators. */
export interface RouteDeps {
  db: Kysely<Database>;
  config: Config;
  tokens: TokenService;
  queue: JobQueue;
  /** Writes stages, committing concurrent ones together: one per process, shared with the workers (staging-writer.ts). */
  staging: StagingWriter;
  /** The one writer of events, built once per process with the webhooks' fan-out trigger (events.ts). */
  events: Events;
  /** The process's clock (core/clock.ts): the time every decision of the routes' services is made by. */
  clock: Clock;
  /** The process's webhook fan-out, whose trigger `events` has: the endpoint routes tell it of a new or re-enabled endpoint. */
  fanout: WebhookFanout;
}
