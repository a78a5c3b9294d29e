import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database, Supplier } from '../db/schema.ts';
import type { Store } from '../db/store.ts';
import type { Clock } from './clock.ts';

// The directory: API keys and import suppliers, held in memory by every instance so that a request is
// authenticated and finds its supplier without a round trip to the store (issue: the revocation check
// and the supplier lookup were two round trips before any work, on every request).
//
// Why it is never stale for long, on any instance: a change to either table sends a NOTIFY from the
// changing transaction itself (migration 012), delivered on commit to every instance's listening
// session, and each instance then forgets everything it holds. Revoking a key or pausing a supplier is
// therefore seen by every instance within the time a notice takes to arrive (milliseconds).
// - While the listening session is down (a database restart, a terminated backend), nothing is served
//   from memory: every lookup reads the store, as before, until the session is back.
// - A lookup that started before a notice and ends after it is not remembered (the generation check),
//   so a read racing a change cannot put the old row back.
// - Only hits are remembered: an unknown key or supplier is read from the store every time, so that
//   a new supplier needs no notice to be found (and garbage cannot fill the memory).
// - Entries also expire after MAX_AGE_MS, a bound should a notice ever be lost unseen.

const CHANNEL = 'directory_changed';
const MAX_AGE_MS = 60_000;
/** Far above any real number of keys or suppliers; reaching it just starts over. */
const MAX_ENTRIES = 10_000;
/** A sync that sees no answer in this time gives up waiting (and forgets everything, to be safe). */
const SYNC_TIMEOUT_MS = 2_000;
const SYNC_PREFIX = 'sync:';

export interface ActiveKey { id: number; organisation_id: number }

export interface Directory {
  /** The API key with this id, unless revoked or deleted. */
  activeKey(id: number): Promise<ActiveKey | undefined>;
  /** The supplier `code` of the organisation, if it has one (another organisation's is undefined, D3). */
  supplier(organisationId: number, code: string): Promise<Supplier | undefined>;
  /**
   * Resolves once every change committed before the call is reflected here: a notice of its own is
   * sent, and notices arrive in commit order. What a process that changed a key or supplier itself
   * waits on before relying on the change (the tests do, after an import-admin call).
   */
  sync(): Promise<void>;
  close(): Promise<void>;
}

interface Entry<V> { value: V; at: number }

/** The bounds, for tests: how long an entry is trusted, and how many of each kind are held. */
export interface DirectoryLimits { maxAgeMs?: number; maxEntries?: number }

/** `clock`: how old an entry is (the process's clock: a test moves it past `maxAgeMs` instead of sleeping). */
export async function openDirectory(store: Pick<Store, 'db' | 'listen'>, clock: Clock,
  { maxAgeMs = MAX_AGE_MS, maxEntries = MAX_ENTRIES }: DirectoryLimits = {}): Promise<Directory> {
  const { db } = store;
  const keys = new Map<number, Entry<ActiveKey>>();
  const suppliers = new Map<string, Entry<Supplier>>();
  let live = false;
  let generation = 0;
  const syncs = new Map<string, () => void>();
  const forget = () => {
    generation += 1;
    keys.clear();
    suppliers.clear();
  };
  const unlisten = await store.listen(CHANNEL, {
    notice(payload) {
      forget();
      if (payload.startsWith(SYNC_PREFIX)) syncs.get(payload)?.();
    },
    connected(up) {
      // Notices may have been missed while down: what was held before is dropped either way.
      forget();
      live = up;
      if (!up) for (const done of syncs.values()) done();
    },
  });

  const stored = storeDirectory(db);
  async function lookup<K, V>(map: Map<K, Entry<V>>, key: K, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = clock.nowMs();
    if (live) {
      const hit = map.get(key);
      if (hit && now - hit.at < maxAgeMs) return hit.value;
    }
    const seen = generation;
    const value = await read();
    if (value !== undefined && live && seen === generation) {
      if (map.size >= maxEntries) map.clear();
      map.set(key, { value, at: now });
    }
    return value;
  }

  return {
    activeKey: (id) => lookup(keys, id, () => stored.activeKey(id)),
    supplier: (organisationId, code) => lookup(suppliers, `${organisationId}\u0000${code}`, () => stored.supplier(organisationId, code)),
    async sync() {
      if (!live) return;
      const token = `${SYNC_PREFIX}${randomUUID()}`;
      const seen = new Promise<void>((resolve) => {
        const timer = setTimeout(() => { forget(); done(); }, SYNC_TIMEOUT_MS);
        const done = () => { clearTimeout(timer); syncs.delete(token); resolve(); };
        syncs.set(token, done);
      });
      try {
        await sql`SELECT pg_notify(${CHANNEL}, ${token})`.execute(db);
      } catch (error) {
        syncs.get(token)?.();
        throw error;
      }
      await seen;
    },
    async close() {
      live = false;
      forget();
      await unlisten();
    },
  };
}

/**
 * The same lookups read from the store every time, with nothing held: for processes that sign tokens
 * or build the app without serving requests (the CLI, the client generator, benchmark set-up).
 */
export function storeDirectory(db: Kysely<Database>): Directory {
  return {
    activeKey: (id) => db.selectFrom('api_keys').select(['id', 'organisation_id']).where('id', '=', id).where('revoked_at', 'is', null)
      .executeTakeFirst(),
    supplier: (organisationId, code) => readSupplier(db, organisationId, code),
    sync: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

export function readSupplier(db: Kysely<Database>, organisationId: number, code: string): Promise<Supplier | undefined> {
  return db.selectFrom('import_suppliers').selectAll()
    .where('code', '=', code).where('organisation_id', '=', organisationId)
    .executeTakeFirst();
}
