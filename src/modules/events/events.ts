import { sql, type Compilable, type Kysely, type OperationNodeSource, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';
import type { EventType, NewEvent } from './event-types.ts';
import { eventsInsert } from './events.repository.ts';

// The one writer of events (migration 004). Every event is written inside the transaction (or the
// statement) of the change it reports, so it commits or rolls back with it. What must follow a
// recorded event, the webhooks' fan-out being woken, is done by the database in the same statement
// (migration 027's trigger), so a statement that records events needs no transaction for it.
// Built once per process by the composition root (composition.ts) and handed to the services that
// write events: no module-level state.

/** A change built and not yet run: an INSERT … RETURNING named columns (its plan must not depend on its values). */
export type EventWrite<Row> = RawBuilder<Row> | (Compilable<Row> & OperationNodeSource);

/** What a row of a per-row write (recordPerRow) returns, at least: the event's supplier and account. */
export interface RowOfEvent { supplier_id: number; external_account_number: string | null }

export interface Events {
  /**
   * This write and its events: `write` (the change the events report, when there is one) and the
   * events in ONE statement inside `trx`, a round trip less than two (the statement is
   * server-prepared, db/server-prepared.ts). Answers the rows `write` returns; if `write` fails, no
   * event is written either. Without a write (an import that found nothing new, a state change
   * already made) the events alone, in the order given, answering []. Taking a Transaction makes a
   * call outside one a type error.
   */
  record<Row = never>(trx: Transaction<Database>, events: readonly NewEvent[], write?: EventWrite<Row> | null): Promise<Row[]>;
  /**
   * For a writer that cannot know its events before the change runs (the staging group commit:
   * whether each row was new): `write` and, in the same statement, one event of `type` per row it
   * returns, with the row's supplier and account and `data` (SQL over the written row, `w`). One
   * statement is atomic by itself, so the change and its events commit together without BEGIN and
   * COMMIT.
   */
  recordPerRow<Row extends RowOfEvent>(db: Kysely<Database>, write: RawBuilder<Row>, perRow: { type: EventType; data: RawBuilder<unknown> }): Promise<Row[]>;
  /**
   * For a statement of data-modifying CTEs that writes a change and its events together (the create's
   * account tree): the insert, to run as one of its CTEs, of one event of `type` per row of the CTE
   * named `rows` (with the event's `supplier_id` and `external_account_number`; `data` is SQL over
   * the row, `w`), in the order of the row's column `orderBy` when given (the events' order in the
   * feed).
   */
  insertPerRow(rows: string, perRow: { type: EventType; data: RawBuilder<unknown> }, orderBy?: string): RawBuilder<never>;
}

/** The events writer of one process. */
export function createEvents(): Events {
  const insertPerRow = (rows: string, { type, data }: { type: EventType; data: RawBuilder<unknown> }, orderBy?: string): RawBuilder<never> => sql<never>`
      INSERT INTO events (supplier_id, type, external_account_number, data)
      SELECT w.supplier_id, ${type}, w.external_account_number, ${data} FROM ${sql.table(rows)} w${orderBy ? sql` ORDER BY ${sql.ref(`w.${orderBy}`)}` : sql``}`;

  return {
    async record<Row>(trx: Transaction<Database>, events: readonly NewEvent[], write?: EventWrite<Row> | null): Promise<Row[]> {
      if (write === undefined || write === null) {
        if (events.length > 0) await eventsInsert(trx, events).execute();
        return [];
      }
      if (events.length === 0) throw new Error('a write with events needs at least one event');
      const { rows } = await sql<Row>`${sql.raw(SERVER_PREPARED)} WITH written AS (${write}), recorded AS (${eventsInsert(trx, events)}) SELECT * FROM written`.execute(trx);
      return rows;
    },

    async recordPerRow<Row extends RowOfEvent>(db: Kysely<Database>, write: RawBuilder<Row>, perRow: { type: EventType; data: RawBuilder<unknown> }): Promise<Row[]> {
      const { rows } = await sql<Row>`${sql.raw(SERVER_PREPARED)}
    WITH written AS (
      ${write}
    ), recorded AS (${insertPerRow('written', perRow)})
    SELECT * FROM written`.execute(db);
      return rows;
    },

    insertPerRow,
  };
}
