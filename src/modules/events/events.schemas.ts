import { Type, type Static } from '@sinclair/typebox';
import { ImportSupplierCode } from '../../schemas/identifiers.ts';
import { Nullable } from '../../schemas/text.ts';
import { EVENT_TYPES, type EventType } from './event-types.ts';

// Wire shapes of the event feed (D13).

export const MAX_EVENTS_LIMIT = 1000;
export const DEFAULT_EVENTS_LIMIT = 100;

export const EventsQuery = Type.Object({
  // The one supplier code rule (1-64 characters, path-safe), as every other operation takes it.
  import_supplier: ImportSupplierCode,
  after: Type.Optional(Type.String({
    pattern: '^[1-9][0-9]{0,17}$', maxLength: 18,
    description: 'The id of the last event read: the page starts after it, in feed order.',
  })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EVENTS_LIMIT, format: 'int32', description: `At most this many events (default ${DEFAULT_EVENTS_LIMIT}).` })),
}, { additionalProperties: false });
export type EventsQuery = Static<typeof EventsQuery>;

export const Event = Type.Object({
  id: Type.String({ description: 'Opaque and unique; also the `webhook-id` of its deliveries. Page with `after`.' }),
  type: Type.Unsafe<EventType>({ type: 'string', enum: [...EVENT_TYPES] }),
  created_at: Type.String({ description: 'UTC, YYYY-MM-DDTHH:MM:SSZ.' }),
  import_supplier: Type.String(),
  external_account_number: Nullable(Type.String({ description: 'Null for job events.' })),
  data: Type.Object({}, { additionalProperties: true, description: 'Depends on the type, for example `{"first_staging": true}` for import_process.staged.' }),
}, { $id: 'Event' });
export type Event = Static<typeof Event>;

export const EventList = Type.Array(Event, {
  description: 'In the order the events were committed. Read the next page with `after` = the last id.',
});
export type EventList = Static<typeof EventList>;
