import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { StoreDeps } from '../../http/route-deps.ts';
import { answer, refusal } from '../../http/openapi.ts';
import { EVENTS, UNKNOWN_AFTER } from './events.examples.ts';
import { EventList, EventsQuery } from './events.schemas.ts';
import { eventFeed } from './events.service.ts';

export const eventsRoutes: FastifyPluginAsync<StoreDeps> = async (app, { db }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().get('/events/', {
    schema: {
      tags: ['Events'],
      operationId: 'listEvents',
      summary: 'The supplier\'s events, in the order they were committed',
      description: 'Keyset-paged: pass the id of the last event read as `after`. Events are kept at least 30 days.',
      querystring: EventsQuery,
      response: {
        200: answer(EventList, 'The next events of the supplier, oldest first; empty when there is nothing new.', EVENTS),
        400: refusal(['invalid'], UNKNOWN_AFTER, { note: 'A query parameter is out of its bounds, or `after` names no kept event of the supplier.' }),
        404: refusal(['not_found'], { detail: 'No import supplier with code "ACME".', code: 'not_found' }, { note: 'No such import supplier for the caller\'s organisation.' }),
      },
    },
  }, async (request) => eventFeed(db, callerOf(request), request.query));
};
