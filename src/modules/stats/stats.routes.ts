import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import { AccountAttempts, AttemptsPathParams, StatsPathParams, SupplierStats, SupplierSummaryList } from './stats.schemas.ts';
import { accountAttempts, callerSuppliers, supplierStats } from './stats.service.ts';

// D14: the statistics of one supplier, the data of the dashboard (/dashboard/).
export const statsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.get<{ Params: StatsPathParams }>('/stats/:import_supplier_code/', {
    schema: {
      tags: ['Statistics'], operationId: 'getSupplierStats', summary: 'A supplier\'s migration at a glance',
      description: 'Counts by state, accounts created per hour over the last 48 hours, the failing accounts grouped by error code and attr '
        + '(up to 20 groups, 5 examples each), and the supplier\'s unfinished migration jobs. 404 `not_found` for an unknown supplier '
        + 'or another organisation\'s.',
      params: StatsPathParams,
      response: { 200: SupplierStats, 404: ErrorBody },
    },
  }, async (request) => supplierStats(db, callerOf(request), request.params.import_supplier_code));

  app.get('/suppliers/', {
    schema: {
      tags: ['Statistics'], operationId: 'listSuppliers', summary: 'The caller\'s import suppliers',
      description: 'Every import supplier of the caller\'s organisation, by code, with its status (the dashboard\'s supplier picker).',
      response: { 200: SupplierSummaryList },
    },
  }, async (request) => callerSuppliers(db, callerOf(request)));

  app.get<{ Params: AttemptsPathParams }>('/stats/:import_supplier_code/attempts/:external_account_number/', {
    schema: {
      tags: ['Statistics'], operationId: 'getAccountAttempts', summary: 'An account\'s create attempts, newest first',
      description: 'The latest 20 create attempts of one staged account, with the error of each failed one. 404 `not_found` for an unknown '
        + 'or another organisation\'s supplier, `account_not_found` for an account never staged.',
      params: AttemptsPathParams,
      response: { 200: AccountAttempts, 404: ErrorBody },
    },
  }, async (request) => accountAttempts(db, callerOf(request), request.params.import_supplier_code, request.params.external_account_number));
};
