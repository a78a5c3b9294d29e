import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { prefersCsv } from '../../http/accept.ts';
import { callerOf } from '../../http/auth.ts';
import { answer } from '../../http/openapi.ts';
import type { Store } from '../../db/store.ts';
import { RECONCILIATION, RECONCILIATION_EXCEPTION } from './migration-jobs.examples.ts';
import { JOB_ID_TOO_LONG, NO_JOB } from './migration-jobs.routes.ts';
import { JobPathParams } from './migration-jobs.schemas.ts';
import { ExceptionLine, ReconciliationReport } from './reconciliation.schemas.ts';
import * as reconciliation from './reconciliation.service.ts';

const TAGS = ['Migration jobs'];
const NDJSON = 'application/x-ndjson';

// Reconciliation of a migration job: its report, and its exceptions as NDJSON or CSV.
// The report reads the store in slices (Store.readInSlices), so the plugin takes the store itself.
export const reconciliationRoutes: FastifyPluginAsync<{ store: Store }> = async (plugin, { store }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/migration-jobs/:job_id/reconciliation/', {
    config: { oneAtATime: true },
    schema: {
      tags: TAGS, operationId: 'reconcileMigrationJob', summary: 'Reconcile the job: legacy, file and store, measure by measure',
      description: 'For each measure (accounts, customers, supply_points, meters, statements, transactions, notes, '
        + 'payment_instructions, balance_total, statements_gross_total): the job\'s `control_totals`, what the uploaded file holds, '
        + 'and what the store holds now for the items the records carry, read by their own keys (never from the records\' '
        + 'outcomes). Counts are integers, money decimal strings summed exactly. The verdict is `incomplete` while the job is not '
        + 'finished, else `differs` when a measure differs or any record is an exception (see the exceptions), else `balanced`.',
      params: JobPathParams,
      response: {
        200: answer(ReconciliationReport, 'The reconciliation report.', RECONCILIATION),
        400: JOB_ID_TOO_LONG,
        404: NO_JOB,
      },
    },
  }, async (request) => reconciliation.reconcile(store, callerOf(request), request.params.job_id));

  app.get('/migration-jobs/:job_id/reconciliation/exceptions/', {
    config: { oneAtATime: true },
    schema: {
      tags: TAGS, operationId: 'listMigrationJobExceptions', summary: 'Records the store does not hold as sent (NDJSON, or CSV)',
      description: 'In line order, one line per measure where a record\'s figure and the store\'s differ; a record whose account the '
        + 'store does not hold (or whose line could not be read) is one line with measure `not_migrated`; a record that failed on an '
        + 'account the store holds is one line with measure `failed` first, since the store holds other data than its line sent even '
        + 'where every count and sum agrees. With `Accept: text/csv`, '
        + 'CSV with a header row: line, external_account_number, measure, file, migrated. A CSV text cell beginning with `=`, `+`, '
        + '`-`, `@`, tab or carriage return is written with a leading `\'`; sums of money are written as numbers.',
      params: JobPathParams,
      response: {
        200: answer({
          content: {
            [NDJSON]: { schema: ExceptionLine },
            'text/csv': { schema: { type: 'string', description: 'CSV with a header row.' } },
          },
        }, 'The exceptions in line order: one JSON object per line, or CSV rows.', RECONCILIATION_EXCEPTION),
        400: JOB_ID_TOO_LONG,
        404: NO_JOB,
      },
    },
  }, async (request, reply) => {
    const csv = prefersCsv(request.headers.accept);
    const chunks = await reconciliation.streamExceptions(store.db, callerOf(request), request.params.job_id, csv ? 'csv' : 'ndjson');
    return reply.type(csv ? 'text/csv; charset=utf-8' : `${NDJSON}; charset=utf-8`).send(Readable.from(chunks));
  });
};
