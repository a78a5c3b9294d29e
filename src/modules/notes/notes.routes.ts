import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import { CreateNotesBody, CreateNotesResponse } from './notes.schemas.ts';
import { importNotes } from './notes.service.ts';

export const notesRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.post<{ Body: CreateNotesBody }>('/notes/create/', {
    schema: {
      tags: ['imported data'],
      summary: 'Import notes onto an imported account (spec 4.4)',
      description: 'One result per posted note, in order. A note is created only when the account has no note with the '
        + 'same body (and the same created_at, when one is sent); a note of documents only dedupes on its set of '
        + 'document paths. Document paths are relative to the supplier\'s documents root. A paused or complete '
        + 'supplier does not block this.',
      body: CreateNotesBody,
      response: { 201: CreateNotesResponse, 400: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => reply.code(201).send(await importNotes(db, callerOf(request), request.body)));
};
