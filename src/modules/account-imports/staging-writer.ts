import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Store } from '../../db/store.ts';
import type { Events, NewEvent } from '../events/index.ts';
import * as imports from './account-imports.repository.ts';

// Group commit for staging (issue #12). A stage is one small upsert and one event, and alone it pays
// for a whole transaction: the round trips of BEGIN, the statements and COMMIT, and a WAL flush at
// commit. Under load, the stages that arrive while a flush runs are written together by the next
// one: ONE statement upserts them all and records their events, and runs alone (a statement is
// atomic by itself: no BEGIN, no COMMIT; events.ts, recordPerRow). Each caller still awaits its own
// row's outcome, so an HTTP request answers 201, 200 or its own 400 exactly as if it had been
// written alone.
//
// No timer: the first row to arrive when a flush slot is free schedules a flush on setImmediate
// (rows arriving in the same turn of the event loop join it); rows arriving while every slot is busy
// wait, and are flushed as soon as a slot frees. At low load a row is written at once, alone; under
// load batches grow by themselves to what arrived during the flushes before.
//
// Two flushes may run at once on PostgreSQL (one on PGlite, which has one session): a flush's round
// trip also waits for the event loop, busy validating the next requests (measured: 7 ms from start to
// answer for 2 ms of PostgreSQL's time), and with one slot the writer was busy 97% of the time when
// a flush was four round trips. 1, 2 and 4 slots measured alike with one round trip. An account already in a running flush waits for it, so the stages of one account are
// written in the order they arrived; a batch never holds one account twice either (ON CONFLICT DO
// UPDATE cannot touch a row twice in one statement). A batch is sorted by (supplier, external
// account number), so two batches (of this instance or another) lock shared rows in the same order
// and cannot deadlock.
//
// If the batch's statement fails for any reason (a row the store cannot keep, a deadlock, a lost
// connection), nothing of it committed, and each of its rows is written again alone, in a
// transaction of its own, as before group commit: a bad row fails its own request only, and every
// other error reaches each request as it would have.
//
// One writer per process, owned by the account imports module that the composition root builds
// (createImports, composition.ts), so the app's stages and the workers' share it: no module state.

/** What stageAccount hands over: the supplier checks are done; `data` is the validated account data. */
export interface StageRow { supplierId: number; externalAccountNumber: string; data: unknown }

/** inserted: first staging (201) or not (200); refused: the guard kept the row (imported, or marked to skip). */
export type StageOutcome = { inserted: boolean } | { refused: true };

export interface StagingWriter {
  stage(row: StageRow): Promise<StageOutcome>;
}

export interface StagingWriterOptions {
  /** Flushes running at once. Default: 2 on PostgreSQL, 1 on PGlite (a second would only wait for its one session). */
  concurrency?: number;
  /** Rows a batch holds at most. */
  maxRows?: number;
  /** JSON characters of staged data a batch holds at most (a larger row still goes, alone). */
  maxJsonChars?: number;
}

interface Pending extends imports.StagedRowJson {
  key: string;
  data: unknown;
  resolve(outcome: StageOutcome): void;
  reject(error: unknown): void;
}

export function createStagingWriter(store: Pick<Store, 'db' | 'kind'>, events: Events, options: StagingWriterOptions = {}): StagingWriter {
  const { db } = store;
  const { concurrency = store.kind === 'pglite' ? 1 : 2, maxRows = 100, maxJsonChars = 4 * 1024 * 1024 } = options;
  let waiting: Pending[] = [];
  /** The accounts of the running flushes: their next stages wait. */
  const flushing = new Set<string>();
  let running = 0;
  let scheduled = false;

  const schedule = () => {
    if (scheduled || running >= concurrency) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      startFlushes();
    });
  };

  const startFlushes = () => {
    while (running < concurrency && waiting.length > 0) {
      const batch = takeBatch();
      if (batch.length === 0) return; // all that waits is behind a running flush
      running += 1;
      for (const row of batch) flushing.add(row.key);
      void flush(db, events, batch)
        .catch((error: unknown) => { for (const row of batch) row.reject(error); })
        .finally(() => {
          for (const row of batch) flushing.delete(row.key);
          running -= 1;
          startFlushes();
        });
    }
  };

  /** The next batch, in arrival order less the rows it must leave for later; sorted for locking. */
  const takeBatch = (): Pending[] => {
    const batch: Pending[] = [];
    const later: Pending[] = [];
    // Every account seen in this pass: a stage taken or left for later keeps the account's later
    // stages behind it.
    const seen = new Set<string>();
    let chars = 0;
    for (const row of waiting) {
      const fits = batch.length < maxRows && (batch.length === 0 || chars + row.dataJson.length <= maxJsonChars);
      if (fits && !seen.has(row.key) && !flushing.has(row.key)) {
        batch.push(row);
        chars += row.dataJson.length;
      } else {
        later.push(row);
      }
      seen.add(row.key);
    }
    waiting = later;
    return batch.sort(byAccount);
  };

  return {
    stage({ supplierId, externalAccountNumber, data }) {
      return new Promise<StageOutcome>((resolve, reject) => {
        // Stringified here, once: the batch's parameter is spliced from these texts.
        const dataJson = JSON.stringify(data);
        waiting.push({ supplierId, externalAccountNumber, dataJson, data, key: `${supplierId}:${externalAccountNumber}`, resolve, reject });
        schedule();
      });
    },
  };
}

/** Supplier id, then external account number by UTF-16 code units: the same order in every instance. */
function byAccount(a: Pending, b: Pending): number {
  if (a.supplierId !== b.supplierId) return a.supplierId - b.supplierId;
  if (a.externalAccountNumber === b.externalAccountNumber) return 0;
  return a.externalAccountNumber < b.externalAccountNumber ? -1 : 1;
}

const stagedEvent = (supplierId: number, externalAccountNumber: string, inserted: boolean): NewEvent =>
  ({ supplierId, type: 'import_process.staged', externalAccountNumber, data: { first_staging: inserted } });

/** One statement for the batch (its rows and their events); on any failure, each row alone. Settles every row's promise. */
async function flush(db: Kysely<Database>, events: Events, batch: Pending[]): Promise<void> {
  let inserted: Map<string, boolean>;
  try {
    // The events commit with the staging they report, or neither does (D13): the statement writes
    // both, alone (no BEGIN, no COMMIT).
    const written = await events.recordPerRow(db, imports.upsertStagedBatch(batch), imports.stagedBatchEvent);
    inserted = new Map(written.map((r) => [`${r.supplier_id}:${r.external_account_number}`, r.inserted]));
  } catch {
    // Nothing committed. The rows are independent (one account each), so they may go at once.
    await Promise.all(batch.map((row) => writeAlone(db, events, row).then(row.resolve, row.reject)));
    return;
  }
  for (const row of batch) {
    const first = inserted.get(row.key);
    // Not returned: the upsert's guard refused the row (imported or marked to skip).
    row.resolve(first === undefined ? { refused: true } : { inserted: first });
  }
}

/**
 * A writer without group commit: each stage in a transaction of its own on `db`. For work that must
 * stay on one handle (a pre-flight's rehearsal, db/rehearsal.ts), where a shared batch cannot join.
 */
export function stagingOn(db: Kysely<Database>, events: Events): StagingWriter {
  return { stage: (row) => writeAlone(db, events, row) };
}

/** The single-row path, as staging was written before group commit: its own transaction and event. */
function writeAlone(db: Kysely<Database>, events: Events, row: StageRow): Promise<StageOutcome> {
  return db.transaction().execute(async (trx) => {
    const written = await imports.upsertStaged(trx, row.supplierId, row.externalAccountNumber, row.data);
    if (!written) return { refused: true } as const;
    await events.record(trx, [stagedEvent(row.supplierId, row.externalAccountNumber, written.inserted)]);
    return { inserted: written.inserted };
  });
}
