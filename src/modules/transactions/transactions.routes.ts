import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import {
  CreateTransactionsBody, CreateTransactionsQuery, CreateTransactionsResponse, TransactionImportError,
} from './transactions.schemas.ts';
import { importTransactions } from './transactions.service.ts';

export const transactionsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.post<{ Body: CreateTransactionsBody; Querystring: CreateTransactionsQuery }>('/transactions/create/', {
    schema: {
      tags: ['imported data'],
      summary: 'Import financial transactions onto an imported account (spec 4.5)',
      description: 'All or nothing per batch. Dedupe by transaction_id per account. A transaction dated before the open '
        + 'statement period (which starts the day after the latest historical statement) is moved to its first day '
        + 'with a description and a pinned note, or fails the batch when force_add_to_current_statement=false. '
        + 'A batch that would take the account balance past ±99999999999999.99 fails with account_balance_out_of_range.',
      querystring: CreateTransactionsQuery,
      body: CreateTransactionsBody,
      response: { 201: CreateTransactionsResponse, 400: TransactionImportError, 404: ErrorBody },
    },
  }, async (request, reply) => {
    const result = await importTransactions(db, callerOf(request), request.body, {
      checkPreviouslyAdded: request.query.check_previously_added ?? true,
      forceAddToCurrentStatement: request.query.force_add_to_current_statement ?? true,
    });
    return reply.code(201).send(result);
  });
};
