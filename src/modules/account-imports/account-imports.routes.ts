import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import { answer, badPathParameter, refusal, RETRY_AFTER } from '../../http/openapi.ts';
import type { StoreDeps } from '../../http/route-deps.ts';
import type { Imports } from './account-imports.module.ts';
import { AccountPathParams } from '../../schemas/identifiers.ts';
import { ACCOUNT_DATA_REFUSED, EXAMPLE_ACCOUNT, EXAMPLE_SERVICE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { AccountData } from '../account-data/index.ts';
import {
  ACCOUNT_STATUS, ALREADY_IMPORTED, CONCURRENCY_LIMIT, CREATE_ACCOUNT, NO_IMPORT_PROCESS, STAGED,
} from './account-imports.examples.ts';
import {
  AccountStatusResponse, ProcessAccountBody, ProcessAccountResponse, StageAccountResponse,
} from './account-imports.schemas.ts';
import { accountListsRoutes } from './account-lists.routes.ts';

const TAGS = ['Account import'];

// Staging, creating and following accounts (spec 4.2, 4.3, 4.8–4.11; D6, D7). HTTP only: the services
// decide everything.
export const accountImportsRoutes: FastifyPluginAsync<StoreDeps & { imports: Imports }> = async (plugin, deps) => {
  const { imports } = deps;
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

  app.post('/account-import-process/create-or-update/', {
    schema: {
      tags: TAGS,
      operationId: 'stageAccount',
      summary: 'Stage account data (201 first time, 200 re-stage)',
      description: 'Validates the body exactly as validate-account does, then stores it as the account\'s staged data, '
        + 'replacing any data staged before. Refused when the account is already imported or marked to skip, or the '
        + 'supplier is paused or complete.',
      body: AccountData,
      requestExample: EXAMPLE_ACCOUNT,
      response: {
        200: answer(StageAccountResponse, 'Staged again: this data replaced the data staged before.', STAGED),
        201: answer(StageAccountResponse, 'Staged for the first time.', STAGED),
        400: refusal(['account_failed_validation', 'parse_error', 'import_supplier_not_found', 'import_supplier_paused',
          'import_supplier_complete', 'account_already_imported', 'account_marked_to_skip'], ACCOUNT_DATA_REFUSED, {
          note: '`account_already_imported` adds `external_account_number` and `service_account_number`.',
        }),
      },
    },
  }, async (request, reply) => {
    const result = await imports.stage(callerOf(request), request.body);
    return reply.code(result.created ? 201 : 200).send(result.body);
  });

  app.post('/account-import-process/process/', {
    schema: {
      tags: TAGS,
      operationId: 'createAccount',
      summary: 'Create the account from its staged data',
      description: 'Re-validates the staged data and builds the account with all its customers, supply points, meters and '
        + 'notes in one transaction. `dry_run: true` runs it all and rolls back (400 `dry_run_rolled_back`). The refusals '
        + 'are checked in the order listed below. Each attempt, failed or not, shows in the account\'s import status.',
      body: ProcessAccountBody,
      requestExample: CREATE_ACCOUNT,
      response: {
        201: answer(ProcessAccountResponse, 'The account was created.', { service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER }),
        400: refusal(['invalid', 'parse_error', 'import_supplier_not_found', 'import_supplier_paused', 'import_supplier_complete',
          'account_not_staged', 'account_already_imported', 'account_marked_to_skip', 'account_import_in_progress',
          'operations_team_not_found', 'account_failed_validation', 'supply_point_already_registered', 'dry_run_rolled_back'], ALREADY_IMPORTED, {
          note: '`account_already_imported` adds `external_account_number` and `service_account_number`.',
        }),
        429: refusal(['concurrency_limit_exceeded'], CONCURRENCY_LIMIT, {
          note: 'The service creates a bounded number of accounts at once, across all its instances; retry after `Retry-After` seconds.',
          headers: { 'Retry-After': RETRY_AFTER },
        }),
      },
    },
  }, async (request, reply) => {
    const created = await imports.create(callerOf(request), request.body);
    return reply.code(201).send(created);
  });

  app.get('/account-transfer-status/:import_supplier_code/:external_account_number/', {
    schema: {
      tags: TAGS,
      operationId: 'getAccountStatus',
      summary: 'Import status of one account',
      description: 'UNKNOWN (staged, no account; a previous attempt failed or none was made), IN_PROGRESS (a create is '
        + 'running now), COMPLETED (the account exists). `last_error` is the latest failed create attempt, until the account is imported.',
      params: AccountPathParams,
      response: {
        200: answer(AccountStatusResponse, 'The account\'s import status.', ACCOUNT_STATUS),
        400: badPathParameter('external_account_number'),
        404: refusal(['account_not_found'], NO_IMPORT_PROCESS, { note: 'The supplier (or another organisation\'s) has no import process for the account.' }),
      },
    },
  }, async (request) => {
    const { import_supplier_code: code, external_account_number: ext } = request.params;
    return imports.status(callerOf(request), code, ext);
  });

  await app.register(accountListsRoutes, deps);
};
