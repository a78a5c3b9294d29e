import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { StoreDeps } from '../../http/route-deps.ts';
import { answer, badPathParameter, refusal } from '../../http/openapi.ts';
import { AccountPathParams, SupplierPathParams } from '../../schemas/identifiers.ts';
import { ACCOUNT_ATTEMPTS, SUPPLIER_STATS, SUPPLIERS } from './stats.examples.ts';
import { AccountAttempts, SupplierStats, SupplierSummaryList } from './stats.schemas.ts';
import { accountAttempts, callerSuppliers, supplierStats } from './stats.service.ts';

// D14: the statistics of one supplier, the data of the dashboard (/dashboard/).
const NO_SUPPLIER = refusal(['not_found'], { detail: 'No import supplier with code "ACME".', code: 'not_found' }, {
  note: 'No such import supplier for the caller\'s organisation.',
});

export const statsRoutes: FastifyPluginAsync<StoreDeps> = async (plugin, { db }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  app.get('/stats/:import_supplier_code/', {
    schema: {
      tags: ['Statistics'], operationId: 'getSupplierStats', summary: 'A supplier\'s migration at a glance',
      description: 'Counts by state, accounts created per hour over the last 48 hours, the failing accounts grouped by error code and attr '
        + '(up to 20 groups, 5 examples each), and the supplier\'s unfinished migration jobs.',
      params: SupplierPathParams,
      response: {
        200: answer(SupplierStats, 'The supplier\'s statistics.', SUPPLIER_STATS),
        400: badPathParameter('import_supplier_code'),
        404: NO_SUPPLIER,
      },
    },
  }, async (request) => supplierStats(db, callerOf(request), request.params.import_supplier_code));

  app.get('/suppliers/', {
    schema: {
      tags: ['Statistics'], operationId: 'listSuppliers', summary: 'The caller\'s import suppliers',
      description: 'Every import supplier of the caller\'s organisation, by code, with its status (the dashboard\'s supplier picker).',
      response: { 200: answer(SupplierSummaryList, 'The caller\'s suppliers, by code.', SUPPLIERS) },
    },
  }, async (request) => callerSuppliers(db, callerOf(request)));

  app.get('/stats/:import_supplier_code/attempts/:external_account_number/', {
    schema: {
      tags: ['Statistics'], operationId: 'getAccountAttempts', summary: 'An account\'s create attempts, newest first',
      description: 'The latest 20 create attempts of one staged account, with the error of each failed one.',
      params: AccountPathParams,
      response: {
        200: answer(AccountAttempts, 'The account\'s latest create attempts.', ACCOUNT_ATTEMPTS),
        400: badPathParameter('external_account_number'),
        404: refusal(['not_found', 'account_not_found'], { detail: 'No import process for account "DEMO-0404" of import supplier "DEMO".', code: 'account_not_found' }, {
          note: '`not_found`: no such import supplier for the caller\'s organisation; `account_not_found`: the account was never staged.',
        }),
      },
    },
  }, async (request) => accountAttempts(db, callerOf(request), request.params.import_supplier_code, request.params.external_account_number));
};
