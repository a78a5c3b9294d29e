import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../core/errors.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import type { Caller } from '../../core/caller.ts';
import type { EventType } from './event-types.ts';
import { DEFAULT_EVENTS_LIMIT, type Event, type EventsQuery } from './events.schemas.ts';
import { feedPage, findFeedPosition, isPing, type EventRow } from './events.repository.ts';

/**
 * The feed (D13): the supplier's events in commit order, after the given one. Another organisation's
 * supplier is indistinguishable from an unknown one (404, D3). `after` must name an event of this
 * supplier that is still kept; anything else is a 400 at `after`, never an empty page that would let
 * a reader believe it is up to date.
 */
export async function eventFeed(db: Kysely<Database>, caller: Caller, query: EventsQuery): Promise<Event[]> {
  const supplier = await caller.findSupplier(query.import_supplier);
  if (!supplier) throw new AppError('not_found', `No import supplier with code "${query.import_supplier}".`);
  let after = null;
  if (query.after !== undefined) {
    after = await findFeedPosition(db, supplier.id, Number(query.after)) ?? null;
    if (!after) {
      // A test ping has an id like any event but is in no feed: a reader keeping the last id its
      // webhook endpoint received may hold one.
      const ping = await isPing(db, Number(query.after));
      throw AppError.field('invalid', ping
        ? `Event "${query.after}" is a test ping: pings go to one webhook endpoint and are in no feed. Give the id of the last event of import supplier "${supplier.code}" you read, or read from the start without after.`
        : `No event "${query.after}" of import supplier "${supplier.code}"; it may be older than the retention period. Read from the start without after.`,
      'after');
    }
  }
  const rows = await feedPage(db, supplier.id, after, query.limit ?? DEFAULT_EVENTS_LIMIT);
  return rows.map(toEvent);
}

export function toEvent(row: EventRow): Event {
  return {
    id: String(row.id),
    type: row.type as EventType,
    created_at: utcSeconds(row.created_at),
    import_supplier: row.import_supplier,
    external_account_number: row.external_account_number,
    data: row.data as Record<string, unknown>,
  };
}
