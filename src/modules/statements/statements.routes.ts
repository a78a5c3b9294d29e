import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { Statements } from './statements.service.ts';
import { answer, refusal } from '../../http/openapi.ts';
import { IMPORT_STATEMENTS, STATEMENT_OVERLAP } from './statements.examples.ts';
import { CreateStatementsBody } from './statements.schemas.ts';

export const statementsRoutes: FastifyPluginAsync<{ statements: Statements }> = async (app, { statements }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/historical-statements/create/', {
    schema: {
      tags: ['Imported data'],
      operationId: 'importStatements',
      summary: 'Import historical statements onto an imported account',
      description: 'Answers 201 with the validated data. Idempotent by '
        + 'statement_id: the same statement again changes nothing; a known statement_id with other data is 400 '
        + '`conflict`, naming each differing field. Periods of one account do not overlap (400 `statement_period_overlap`). The latest statement '
        + 'closes the statement periods: transactions are then dated from the day after its bill_period_to_date.',
      body: CreateStatementsBody,
      requestExample: IMPORT_STATEMENTS,
      response: {
        201: answer(CreateStatementsBody, 'The statements are stored (or were already, with the same data); the body is echoed.', IMPORT_STATEMENTS),
        400: refusal(['invalid', 'parse_error', 'import_supplier_not_found', 'statement_period_overlap', 'conflict'], STATEMENT_OVERLAP, {
          note: 'A known statement_id with other data is `conflict`, with a `conflict` item at each differing field '
            + '(`statements.N.gross_amount`) in `errors`.',
        }),
        404: refusal(['account_not_found'], { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', errors: [
          { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', attr: 'external_account_number' }] }, { note: 'The account is not imported (or was never staged).' }),
      },
    },
  }, async (request, reply) => reply.code(201).send(await statements.import(callerOf(request), request.body)));
};
