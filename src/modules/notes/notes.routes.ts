import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { Notes } from './notes.service.ts';
import { answer, refusal } from '../../http/openapi.ts';
import { IMPORT_NOTES, NOTE_RESULTS } from './notes.examples.ts';
import { CreateNotesBody, CreateNotesResponse } from './notes.schemas.ts';

export const notesRoutes: FastifyPluginAsync<{ notes: Notes }> = async (app, { notes }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/notes/create/', {
    schema: {
      tags: ['Imported data'],
      operationId: 'importNotes',
      summary: 'Import notes onto an imported account',
      description: 'One result per posted note, in order. A note is created only when the account has no note with the '
        + 'same body (and the same created_at, when one is sent); a note of documents only dedupes on its set of '
        + 'document paths. Document paths are relative to the supplier\'s documents root. A paused or complete '
        + 'supplier does not block this.',
      body: CreateNotesBody,
      requestExample: IMPORT_NOTES,
      response: {
        201: answer(CreateNotesResponse, 'Each note was created or found already there.', NOTE_RESULTS),
        400: refusal(['invalid', 'parse_error', 'import_supplier_not_found'], { detail: 'The request failed validation.', code: 'invalid', errors: [
          { detail: 'A note needs a body or at least one document path.', code: 'required', attr: 'notes.0' }] }),
        404: refusal(['account_not_found'], { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', errors: [
          { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', attr: 'external_account_number' }] }, { note: 'The account is not imported (or was never staged).' }),
      },
    },
  }, async (request, reply) => reply.code(201).send(await notes.import(callerOf(request), request.body)));
};
