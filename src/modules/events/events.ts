import { sql, type Compilable, type Kysely, type OperationNodeSource, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';
import type { EventType, NewEvent } from './event-types.ts';
import { eventsInsert } from './events.repository.ts';

// The one writer of events (migration 004). Every event is written inside the transaction (or the
// statement) of the change it reports, so it commits or rolls back with it. Built once per process
// by createEvents in the composition root (composition.ts) with what must follow each recorded event,
// and handed to the services that write events: no module-level state.

/**
 * Runs inside the event's transaction, after its insert; a failure fails the change like the insert
 * would. It is told the transaction and a supplier whose events it wrote, once per supplier (the
 * webhooks' fan-out trigger, webhooks/webhook-fanout.ts): nothing else of the events.
 */
export type EventRecordedHook = ((trx: Transaction<Database>, supplierId: number) => Promise<void>) & {
  /** True when the hook would surely do nothing for this supplier's events now (no statement). */
  idleFor?: (supplierId: number) => boolean;
};

/** A change built and not yet run: an INSERT … RETURNING named columns (its plan must not depend on its values). */
export type EventWrite<Row> = RawBuilder<Row> | (Compilable<Row> & OperationNodeSource);

/** What a row of a per-row write (recordPerRow) returns, at least: the event's supplier and account. */
export interface RowOfEvent { supplier_id: number; external_account_number: string | null }

export interface Events {
  /**
   * This write and its events: `write` (the change the events report, when there is one) and the
   * events in ONE statement inside `trx`, a round trip less than two (the statement is
   * server-prepared, db/server-prepared.ts); then the after-record hook. Answers the rows `write`
   * returns; if `write` fails, no event is written either. Without a write (an import that found
   * nothing new, a state change already made) the events alone, in the order given, answering [].
   * Taking a Transaction makes a call outside one a type error.
   */
  record<Row = never>(trx: Transaction<Database>, events: readonly NewEvent[], write?: EventWrite<Row> | null): Promise<Row[]>;
  /**
   * For a writer that cannot know its events before the change runs (the staging group commit:
   * whether each row was new): `write` and, in the same statement, one event of `type` per row it
   * returns, with the row's supplier and account and `data` (SQL over the written row, `w`). When the
   * after-record hook surely has nothing to do for `supplierIds`, the statement runs alone: one
   * statement is atomic by itself, so the change and its events commit together without BEGIN and
   * COMMIT, two round trips fewer. Otherwise it runs in a transaction, followed by the hook once per
   * supplier.
   */
  recordPerRow<Row extends RowOfEvent>(db: Kysely<Database>, write: RawBuilder<Row>, perRow: { type: EventType; data: RawBuilder<unknown> },
    supplierIds: readonly number[]): Promise<Row[]>;
  /**
   * For a statement of data-modifying CTEs that writes a change and its events together (the create's
   * account tree): the insert, to run as one of its CTEs, of one event of `type` per row of the CTE
   * named `rows` (with the event's `supplier_id` and `external_account_number`; `data` is SQL over
   * the row, `w`), in the order of the row's column `orderBy` when given (the events' order in the
   * feed). Once the statement has run, the caller calls `recorded` with the events' suppliers.
   */
  insertPerRow(rows: string, perRow: { type: EventType; data: RawBuilder<unknown> }, orderBy?: string): RawBuilder<never>;
  /** What must follow events written by a statement of the caller's (insertPerRow): the after-record hook. */
  recorded(trx: Transaction<Database>, supplierIds: readonly number[]): Promise<void>;
  /**
   * True when the after-record hook would surely do nothing for this supplier's events now: their
   * statement may then run alone, committing by itself, with no `recorded` to follow.
   */
  idleFor(supplierId: number): boolean;
}

/**
 * The events of one process. `onRecorded`: the webhooks' fan-out trigger where the queue is open;
 * without it (a process that never opened the queue) events are still recorded, and the fan-out's
 * every-minute schedule picks them up.
 */
export function createEvents({ onRecorded = null }: { onRecorded?: EventRecordedHook | null } = {}): Events {
  const afterRecorded = async (trx: Transaction<Database>, supplierIds: Iterable<number>) => {
    if (!onRecorded) return;
    for (const supplierId of new Set(supplierIds)) await onRecorded(trx, supplierId);
  };
  const suppliersOf = (events: readonly NewEvent[]) => events.map((event) => event.supplierId);
  const idleFor = (supplierId: number) => onRecorded === null || (onRecorded.idleFor?.(supplierId) ?? false);

  const insertPerRow = (rows: string, { type, data }: { type: EventType; data: RawBuilder<unknown> }, orderBy?: string): RawBuilder<never> => sql<never>`
      INSERT INTO events (supplier_id, type, external_account_number, data)
      SELECT w.supplier_id, ${type}, w.external_account_number, ${data} FROM ${sql.table(rows)} w${orderBy ? sql` ORDER BY ${sql.ref(`w.${orderBy}`)}` : sql``}`;

  return {
    async record<Row>(trx: Transaction<Database>, events: readonly NewEvent[], write?: EventWrite<Row> | null): Promise<Row[]> {
      if (write === undefined || write === null) {
        if (events.length === 0) return [];
        await eventsInsert(trx, events).execute();
        await afterRecorded(trx, suppliersOf(events));
        return [];
      }
      if (events.length === 0) throw new Error('a write with events needs at least one event');
      const { rows } = await sql<Row>`${sql.raw(SERVER_PREPARED)} WITH written AS (${write}), recorded AS (${eventsInsert(trx, events)}) SELECT * FROM written`.execute(trx);
      await afterRecorded(trx, suppliersOf(events));
      return rows;
    },

    async recordPerRow<Row extends RowOfEvent>(db: Kysely<Database>, write: RawBuilder<Row>, perRow: { type: EventType; data: RawBuilder<unknown> },
      supplierIds: readonly number[]): Promise<Row[]> {
      const statement = sql<Row>`${sql.raw(SERVER_PREPARED)}
    WITH written AS (
      ${write}
    ), recorded AS (${insertPerRow('written', perRow)})
    SELECT * FROM written`;
      if (supplierIds.every(idleFor)) return (await statement.execute(db)).rows;
      return db.transaction().execute(async (trx) => {
        const { rows } = await statement.execute(trx);
        await afterRecorded(trx, supplierIds);
        return rows;
      });
    },

    insertPerRow,
    recorded: afterRecorded,
    idleFor,
  };
}
