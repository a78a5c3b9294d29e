import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import { EventList, EventsQuery } from './events.schemas.ts';
import { eventFeed } from './events.service.ts';

export const eventsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.get<{ Querystring: EventsQuery }>('/events/', {
    schema: {
      tags: ['Events'],
      summary: 'The supplier\'s events, in the order they were committed',
      description: 'Keyset-paged: pass the id of the last event read as `after`. Events are kept at least 30 days. '
        + '404 `not_found` for an unknown supplier; 400 `invalid` at `after` when it names no kept event of the supplier.',
      querystring: EventsQuery,
      response: { 200: EventList, 400: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => eventFeed(db, callerOf(request), request.query));
};
