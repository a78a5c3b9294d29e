import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import { requireCallerSupplier } from '../../core/suppliers.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { AccountData } from './account-data.schemas.ts';
import { ErrorBody } from '../../schemas/error-body.ts';

// Spec 4.1 / D5: validates account data and echoes it; stores nothing. Order (D4): the auth guard,
// the body schema (with the cross-field rules), then the supplier (D3).
export const accountDataRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.post<{ Body: AccountData }>('/validate-account/', {
    schema: {
      tags: ['Account import'],
      summary: 'Validate account import data (nothing is stored)',
      description: 'Checks the account data of spec 2.3 with every rule of docs/validation.md, and that the import supplier exists and belongs to the caller. Answers 200 with the data exactly as sent.',
      body: AccountData,
      response: { 200: AccountData, 400: ErrorBody },
    },
    // The echo is the data exactly as sent (already validated): no serializer may drop or reshape it.
    serializerCompiler: () => (data) => JSON.stringify(data),
  }, async (request) => {
    await requireCallerSupplier(db, callerOf(request), request.body.import_supplier, 'import_supplier');
    return request.body;
  });
};
