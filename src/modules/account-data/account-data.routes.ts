import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import { jsonTextOf } from '../../http/body-encoding.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import { answer, refusal } from '../../http/openapi.ts';
import { AccountData } from './account-data.schemas.ts';
import { ACCOUNT_DATA_REFUSED, EXAMPLE_ACCOUNT } from './account-data.examples.ts';

// Spec 4.1 / D5: validates account data and echoes it; stores nothing. Order (D4): the auth guard,
// the body schema (with the cross-field rules), then the supplier (D3).
export const accountDataRoutes: FastifyPluginAsync = async (app) => {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/validate-account/', {
    schema: {
      tags: ['Account import'],
      operationId: 'validateAccount',
      summary: 'Validate account data (nothing is stored)',
      description: 'Checks the account data with every rule a stage applies, and that the import supplier exists and belongs '
        + 'to the caller. Answers 200 with the data exactly as sent. Nothing is stored: use it to check a payload before staging it.',
      body: AccountData,
      requestExample: EXAMPLE_ACCOUNT,
      response: {
        200: answer(AccountData, 'The data is valid; it is echoed exactly as sent.', EXAMPLE_ACCOUNT),
        400: refusal(['account_failed_validation', 'parse_error', 'import_supplier_not_found'], ACCOUNT_DATA_REFUSED,
          { note: '`account_failed_validation` lists every problem in `errors`, in the order of the fields in the body.' }),
      },
    },
    // The echo is the data exactly as sent (already validated): no serializer may drop or reshape it.
    serializerCompiler: () => (data) => JSON.stringify(data),
    config: { echoesBodyText: true },
  }, async (request, reply) => {
    await requireCallerSupplier(callerOf(request), request.body.import_supplier, 'import_supplier');
    // The text as it came (a JSON content type sends a string as it is); the parsed body only if
    // the text is not at hand.
    const text = jsonTextOf(request.body);
    if (text === undefined) return request.body;
    return reply.type('application/json; charset=utf-8').send(text);
  });
};
