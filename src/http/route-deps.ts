import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Clock } from '../core/clock.ts';
import type { Database } from '../db/schema.ts';
import type { JobQueue } from '../queue/queue.ts';

// A route plugin's options are the parts of the process's modules it uses, named by the plugin itself
// (buildApp hands every plugin all of them, composition.ts): a plugin that reads the store takes
// `StoreDeps`, one that imports notes takes `{ notes: Notes }`. No global decorators.

/** The store's query builder. */
export interface StoreDeps { db: Kysely<Database> }

/** The store, the app's settings, the queue and the clock: what most plugins above a read take. */
export interface ServiceDeps extends StoreDeps { config: Config; queue: JobQueue; clock: Clock }
