import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { AccountPathParams, AccountView } from './account-read.schemas.ts';
import { readAccount } from './account-read.service.ts';
import { ErrorBody } from '../../schemas/error-body.ts';

export const accountsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db, config }) => {
  app.get<{ Params: AccountPathParams }>('/accounts/:import_supplier_code/:external_account_number/', {
    schema: {
      tags: ['accounts'],
      summary: 'Read an imported account (an addition under spec 9.2)',
      description: 'The account an import created, with its customers, supply points, balance, notes, statements and '
        + 'active payment instruction, so a supplier can check what it imported. 404 account_not_found for an unknown '
        + 'account, staged data without an account, or another organisation\'s supplier.',
      params: AccountPathParams,
      response: { 200: AccountView, 404: ErrorBody },
    },
  }, async (request) => readAccount(db, callerOf(request), config.documentsBucket,
    request.params.import_supplier_code, request.params.external_account_number));
};
