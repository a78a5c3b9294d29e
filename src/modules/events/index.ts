// What other modules may use of the events module: the writer (built once per process), the event
// types, and the reads the webhooks' fan-out, deliveries and retention share with the feed.
export { createEvents, type Events } from './events.ts';
export { EVENT_TYPES, type EventType, type NewEvent } from './event-types.ts';
export { committedBeforeEveryRunning, deleteEventsBefore, insertPing, type EventRow, type FeedPosition } from './events.repository.ts';
export { toEvent } from './events.service.ts';
export { eventsRoutes } from './events.routes.ts';
