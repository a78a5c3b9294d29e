import type { FastifyPluginAsync } from 'fastify';
import { ErrorBody } from '../../schemas/error-body.ts';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { AccountData } from '../account-data/account-data.schemas.ts';
import {
  AccountPathParams, AccountStatusResponse, ProcessAccountBody, ProcessAccountResponse, StageAccountResponse,
} from './account-imports.schemas.ts';
import { accountListsRoutes } from './account-lists.routes.ts';
import { accountStatus } from './account-status.service.ts';
import { createAccount } from './create-account.service.ts';
import { stageAccount } from './stage-account.service.ts';

const TAGS = ['Account import'];

// Staging, creating and following accounts (spec 4.2, 4.3, 4.8–4.11; D6, D7). HTTP only: the services
// decide everything.
export const accountImportsRoutes: FastifyPluginAsync<RouteDeps> = async (app, deps) => {
  const { db, config, queue } = deps;

  app.post<{ Body: AccountData }>('/account-import-process/create-or-update/', {
    schema: {
      tags: TAGS,
      summary: 'Stage account data (201 first time, 200 re-stage)',
      description: 'Validates the body exactly as validate-account does, then stores it as the account\'s staged data. '
        + 'Refused (400) when the account is already imported (`account_already_imported`) or marked to skip '
        + '(`account_marked_to_skip`), or the supplier is paused or complete.',
      body: AccountData,
      response: { 200: StageAccountResponse, 201: StageAccountResponse, 400: ErrorBody },
    },
  }, async (request, reply) => {
    const result = await stageAccount(db, callerOf(request), request.body);
    return reply.code(result.created ? 201 : 200).send(result.body);
  });

  app.post<{ Body: ProcessAccountBody }>('/account-import-process/process/', {
    schema: {
      tags: TAGS,
      summary: 'Create the account from its staged data',
      description: 'Re-validates the staged data and builds the account with all its rows in one transaction. '
        + '`dry_run: true` runs it all and rolls back (400 `dry_run_rolled_back`). Errors, in the order checked: '
        + '`import_supplier_not_found`, `import_supplier_paused`/`import_supplier_complete`, `account_not_staged`, '
        + '`account_already_imported` (with external_account_number and service_account_number), `account_marked_to_skip`, '
        + '`account_import_in_progress`, `operations_team_not_found`, 429 `concurrency_limit_exceeded` (with Retry-After; '
        + 'PROCESS_CONCURRENCY_LIMIT creates at once across all instances), `account_failed_validation`, '
        + '`supply_point_already_registered`.',
      body: ProcessAccountBody,
      response: { 201: ProcessAccountResponse, 400: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const created = await createAccount({ db, processConcurrencyLimit: config.processConcurrencyLimit, queue }, callerOf(request), request.body);
    return reply.code(201).send(created);
  });

  app.get<{ Params: AccountPathParams }>('/account-transfer-status/:import_supplier_code/:external_account_number/', {
    schema: {
      tags: TAGS,
      summary: 'Import status of one account',
      description: 'UNKNOWN (staged, no account; a previous attempt failed or none was made), IN_PROGRESS (a create is '
        + 'running now), COMPLETED (the account exists). `last_error` is the latest failed create attempt. 404 '
        + '`account_not_found` when the supplier has no import process for the account.',
      params: AccountPathParams,
      response: { 200: AccountStatusResponse, 404: ErrorBody },
    },
  }, async (request) => {
    const { import_supplier_code: code, external_account_number: ext } = request.params;
    return accountStatus(db, callerOf(request), code, ext);
  });

  await app.register(accountListsRoutes, deps);
};
