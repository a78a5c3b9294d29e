import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { ServiceDeps } from '../../http/route-deps.ts';
import { AccountPathParams } from '../../schemas/identifiers.ts';
import { AccountView } from './account-read.schemas.ts';
import { readAccount } from './account-read.service.ts';
import { answer, badPathParameter, refusal } from '../../http/openapi.ts';
import { ACCOUNT_VIEW } from './accounts.examples.ts';

export const accountsRoutes: FastifyPluginAsync<Pick<ServiceDeps, 'db' | 'config'>> = async (app, { db, config }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().get('/accounts/:import_supplier_code/:external_account_number/', {
    schema: {
      tags: ['Accounts'],
      operationId: 'getAccount',
      summary: 'Read an imported account',
      description: 'The account an import created, with its customers, supply points, balance, notes, statements and '
        + 'active payment instruction, so a supplier can check what it imported. 404 account_not_found for an unknown '
        + 'account, staged data without an account, or another organisation\'s supplier.',
      params: AccountPathParams,
      response: {
        200: answer(AccountView, 'The account.', ACCOUNT_VIEW),
        400: badPathParameter('external_account_number'),
        404: refusal(['account_not_found'], { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found' }),
      },
    },
  }, async (request) => readAccount(db, callerOf(request), config.documentsBucket,
    request.params.import_supplier_code, request.params.external_account_number));
};
