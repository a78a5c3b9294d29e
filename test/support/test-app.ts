import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { after } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openStore, type Store } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import type { TokenService } from '../../src/modules/auth/index.ts';
import type { Events } from '../../src/modules/events/index.ts';
import type { WebhookFanout } from '../../src/modules/webhooks/index.ts';
import { createTestClock, type TestClock } from '../../src/core/clock.ts';
import type { Directory } from '../../src/core/directory.ts';
import type { JobQueue } from '../../src/queue/queue.ts';
import { composeModules, type Modules, type WorkerLogger } from '../../src/composition.ts';
import { startWorkers } from '../../src/workers.ts';
import { isolatedDatabase } from './imports.ts';
import { pgliteTemplate } from './pglite-template.ts';

// One store and one app per test file (PGlite takes seconds to start). The store is an in-memory
// PGlite, or, when DATABASE_URL is set, a database of its own on that server: files run two at a
// time, and one file's queue workers (its own retry policy, its own email transport) must not take
// another file's jobs. Each test makes its own data with unique names, so tests do not depend on order.
export interface TestApp {
  app: FastifyInstance;
  /** The modules of the app and its workers, as main.ts composes them (with the test's clock): a test's second app is built on them. */
  modules: Modules;
  store: Store;
  config: Config;
  tokens: TokenService;
  queue: JobQueue;
  /** The app's events (and its workers'), with the webhooks' fan-out trigger, as the composition root builds them. */
  events: Events;
  /**
   * The clock of the app and its workers (token expiry, throttle windows, webhook retries and lookups):
   * on the system time until a test moves it; a test that moves it puts it back (`reset()`) when done.
   */
  clock: TestClock;
  /** The app's webhook fan-out (its workers' too), as the composition root builds it. */
  fanout: WebhookFanout;
  /**
   * The app's directory of keys and suppliers: after changing either through import-admin's functions,
   * `await t.directory.sync()` before a request that must see the change (on PostgreSQL the notice
   * arrives over the network, a moment after the commit).
   */
  directory: Directory;
}

const quiet = { info() {}, warn() {}, error() {} };

/**
 * Workers run only when the test asks for them with WORKER_CONCURRENCY (tests of the outbox drive
 * delivery themselves); the queue is always open, since creates enqueue on it.
 */
export async function buildTestApp(env: Record<string, string> = {}, options: { workerLogger?: WorkerLogger } = {}): Promise<TestApp> {
  const isolated = env.DATABASE_URL === undefined && process.env.DATABASE_URL ? await isolatedDatabase() : null;
  const databaseUrl = env.DATABASE_URL ?? isolated?.url ?? '';
  const config = loadConfig({ DEMO_SEED: 'false', ...env, DATABASE_URL: databaseUrl });
  const initialData = config.databaseUrl ? undefined : await pgliteTemplate();
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: 'memory://', initialData, poolSize: 50 });
  await migrate(store);
  // Built by the composition root, as main.ts builds them, with a clock the tests can move.
  const clock = createTestClock();
  const modules = await composeModules({ config, store, logger: quiet, clock });
  const app = await buildApp({ modules });
  const workers = env.WORKER_CONCURRENCY ? await startWorkers(modules, options.workerLogger ?? quiet) : null;
  after(async () => {
    await Promise.all([app.close(), workers?.stop()]);
    await modules.stop(1000);
    await store.close();
    await isolated?.drop();
  });
  const { tokens, queue, events, fanout, directory } = modules;
  return { app, modules, store, config, tokens, queue, events, clock, fanout, directory };
}

export const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export interface Tenant {
  organisation: string;
  apiKey: string;
  token: string;
  supplier: string;
  team: string;
  headers: Record<string, string>;
}

/** An organisation with an API key, a token, an ongoing supplier and an operations team. */
export async function createTenant(t: TestApp, supplierOptions: admin.SupplierOptions = {}): Promise<Tenant> {
  const db = t.store.db;
  const { organisation, api_key: apiKey } = await admin.createOrganisation(db, unique('org'));
  const { code: supplier } = await admin.createSupplier(db, unique('SUP'), organisation, supplierOptions);
  const { operations_team: team } = await admin.createTeam(db, unique('team'));
  const { token } = await t.tokens.obtainWithApiKey(apiKey);
  return { organisation, apiKey, token, supplier, team, headers: { authorization: `Token ${token}` } };
}

/** JSON over HTTP through inject: `res.json` is the parsed body. */
export async function call(
  app: FastifyInstance, method: InjectOptions['method'], url: string,
  options: { body?: unknown; headers?: Record<string, string>; token?: string } = {},
) {
  const res = await app.inject({
    method,
    url,
    headers: { ...(options.token ? { authorization: `Token ${options.token}` } : {}), ...options.headers },
    ...(options.body !== undefined ? { payload: options.body as InjectOptions['payload'] } : {}),
  });
  let json: any;
  try { json = res.json(); } catch { json = undefined; }
  return { status: res.statusCode, json, headers: res.headers, body: res.body };
}
