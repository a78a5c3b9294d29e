import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import { CreateStatementsBody } from './statements.schemas.ts';
import { importStatements } from './statements.service.ts';

export const statementsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.post<{ Body: CreateStatementsBody }>('/historical-statements/create/', {
    schema: {
      tags: ['imported data'],
      summary: 'Import historical statements onto an imported account (spec 4.6)',
      description: 'Answers 201 (the spec states both 201 and 200; 201 is used) with the validated data. Idempotent by '
        + 'statement_id: the same statement again changes nothing; a known statement_id with different data is 400 '
        + '`duplicate`. Periods of one account do not overlap (400 `statement_period_overlap`). The latest statement '
        + 'closes the statement periods: transactions are then dated from the day after its bill_period_to_date.',
      body: CreateStatementsBody,
      response: { 201: CreateStatementsBody, 400: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => reply.code(201).send(await importStatements(db, callerOf(request), request.body)));
};
