import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import { answer, refusal } from '../../http/openapi.ts';
import type { StoreDeps } from '../../http/route-deps.ts';
import { JOB_RATE, RECORD_SEARCH } from './migration-jobs.examples.ts';
import { JOB_ID_TOO_LONG, NO_JOB } from './migration-jobs.routes.ts';
import { JobPathParams } from './migration-jobs.schemas.ts';
import { JobRate, RecordSearchPage, RecordSearchQuery } from './job-views.schemas.ts';
import { jobRate, searchRecords } from './job-views.service.ts';

const TAGS = ['Migration jobs'];

// The lead's views of one job (the dashboard's): its records searched, and the pace they finished at.
export const jobViewsRoutes: FastifyPluginAsync<StoreDeps> = async (plugin, { db }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();

  app.get('/migration-jobs/:job_id/records/search/', {
    config: { oneAtATime: true },
    schema: {
      tags: TAGS, operationId: 'searchMigrationJobRecords', summary: 'Find a job\'s records by account, outcome and error code (JSON pages)',
      description: 'The job\'s records matching every filter given, in line order, a page at a time: a record the job rejected '
        + '(an unreadable line, a duplicate, an account that failed validation) is found like any other.',
      params: JobPathParams,
      querystring: RecordSearchQuery,
      response: {
        200: answer(RecordSearchPage, 'One page of the matching records.', RECORD_SEARCH),
        400: refusal(['invalid'], { detail: 'The request failed validation.', code: 'invalid', errors: [
          { detail: '"done" is not a valid choice. Allowed: pending, running, succeeded, skipped, failed, cancelled.', code: 'invalid_choice', attr: 'outcome' }] },
        { note: 'A filter is out of its bounds, or the job id is longer than 100 characters.' }),
        404: NO_JOB,
      },
    },
  }, async (request) => searchRecords(db, callerOf(request), request.params.job_id, request.query));

  app.get('/migration-jobs/:job_id/rate/', {
    config: { oneAtATime: true },
    schema: {
      tags: TAGS, operationId: 'getMigrationJobRate', summary: 'Records finished per minute, hour or day over the job\'s run',
      description: 'The job\'s records counted by when they finished, in buckets as wide as the job needs: a minute while a job runs '
        + 'its first two hours, up to a day over a migration of months.',
      params: JobPathParams,
      response: {
        200: answer(JobRate, 'The job\'s pace.', JOB_RATE),
        400: JOB_ID_TOO_LONG,
        404: NO_JOB,
      },
    },
  }, async (request) => jobRate(db, callerOf(request), request.params.job_id));
};
