import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { Transactions } from './transactions.service.ts';
import { answer, refusal } from '../../http/openapi.ts';
import { IMPORT_TRANSACTIONS, TRANSACTION_REFUSED, TRANSACTION_RESULTS } from './transactions.examples.ts';
import {
  CreateTransactionsBody, CreateTransactionsQuery, CreateTransactionsResponse, TransactionImportError,
} from './transactions.schemas.ts';

export const transactionsRoutes: FastifyPluginAsync<{ transactions: Transactions }> = async (app, { transactions }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/transactions/create/', {
    schema: {
      tags: ['Imported data'],
      operationId: 'importTransactions',
      summary: 'Import financial transactions onto an imported account',
      description: 'All or nothing per batch. Dedupe by transaction_id per account: only an exact repeat is '
        + 'TRANSACTION_ALREADY_EXISTS; a known transaction_id with another amount, date or field is 400 conflict. A transaction dated before the open '
        + 'statement period (which starts the day after the latest historical statement) is moved to its first day '
        + 'with a description and a pinned note, or fails the batch when force_add_to_current_statement=false. '
        + 'A batch that would take the account balance past ±99999999999999.99 fails with account_balance_out_of_range.',
      querystring: CreateTransactionsQuery,
      body: CreateTransactionsBody,
      requestExample: IMPORT_TRANSACTIONS,
      response: {
        201: answer(CreateTransactionsResponse, 'Every transaction was added, or found added before.', TRANSACTION_RESULTS),
        400: refusal(['invalid', 'parse_error', 'import_supplier_not_found', 'TRANSACTION_IMPORT_ERROR', 'account_balance_out_of_range', 'conflict'],
          TRANSACTION_REFUSED, {
            schema: TransactionImportError,
            note: 'Nothing of the batch is stored. `TRANSACTION_IMPORT_ERROR` (a transaction added before, with check_previously_added=false; '
              + 'or dated in a closed statement period, with force_add_to_current_statement=false) adds `status`, `error_detail` and '
              + 'the failing `transaction_data`. `conflict`: a transaction added before is sent with other content; `errors` has '
              + 'a `conflict` item at each differing field (`transactions.N.amount`).',
          }),
        404: refusal(['account_not_found'], { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', errors: [
          { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', attr: 'external_account_number' }] }, { note: 'The account is not imported (or was never staged).' }),
      },
    },
  }, async (request, reply) => {
    const result = await transactions.import(callerOf(request), request.body, {
      checkPreviouslyAdded: request.query.check_previously_added ?? true,
      forceAddToCurrentStatement: request.query.force_add_to_current_statement ?? true,
    });
    return reply.code(201).send(result);
  });
};
