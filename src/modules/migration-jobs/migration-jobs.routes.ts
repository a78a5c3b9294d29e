import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import { AppError } from '../../core/errors.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import {
  CreateJobBody, Job, JobList, JobPathParams, ListJobsQuery, RecordResult, RecordsQuery, UploadReply,
} from './migration-jobs.schemas.ts';
import * as jobs from './migration-jobs.service.ts';

const TAGS = ['Migration jobs'];
const NDJSON = 'application/x-ndjson';

// Migration jobs (D11). The upload is not parsed by Fastify: its parser hands the raw request stream
// to the service, which reads it line by line (gunzipped first with Content-Encoding: gzip).
export const migrationJobsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db, queue, config }) => {
  const deps: jobs.JobsDeps = { db, queue, config };
  app.addContentTypeParser(NDJSON, (_request, payload, done) => done(null, payload));

  app.post<{ Body: CreateJobBody }>('/migration-jobs/', {
    schema: {
      tags: TAGS, operationId: 'createMigrationJob', summary: 'Create a migration job (state open)',
      description: 'A job belongs to one import supplier of the caller. Upload its records, then start it. 400 `import_supplier_not_found`, '
        + '`import_supplier_complete` (a paused supplier may have jobs: they wait), `operations_team_not_found`, `invalid`.',
      body: CreateJobBody,
      response: { 201: Job, 400: ErrorBody },
    },
  }, async (request, reply) => reply.code(201).send(await jobs.createJob(db, callerOf(request), request.body)));

  app.get<{ Querystring: ListJobsQuery }>('/migration-jobs/', {
    schema: {
      tags: TAGS, operationId: 'listMigrationJobs', summary: 'The supplier\'s migration jobs, newest first',
      description: 'Keyset paging as D7: `page_size` (default 100), then follow the `Link` header (`cursor`).',
      querystring: ListJobsQuery,
      response: { 200: JobList, 400: ErrorBody },
    },
  }, async (request, reply) => {
    const page = await jobs.listJobs(db, callerOf(request), request.query);
    if (page.nextCursor) {
      const path = request.url.split('?')[0];
      const size = request.query.page_size ?? 100;
      void reply.header('link', `<${path}?import_supplier=${encodeURIComponent(request.query.import_supplier)}&page_size=${size}&cursor=${page.nextCursor}>; rel="next"`);
    }
    return page.jobs;
  });

  app.get<{ Params: JobPathParams }>('/migration-jobs/:job_id/', {
    schema: {
      tags: TAGS, operationId: 'getMigrationJob', summary: 'A migration job with its counts and progress',
      params: JobPathParams,
      response: { 200: Job, 404: ErrorBody },
    },
  }, async (request) => jobs.getJob(db, callerOf(request), request.params.job_id));

  app.post<{ Params: JobPathParams; Body: unknown }>('/migration-jobs/:job_id/records/', {
    schema: {
      tags: TAGS, operationId: 'uploadMigrationRecords', summary: 'Upload records (NDJSON, one record per line)',
      description: 'Content-Type `application/x-ndjson` (415 otherwise), optionally `Content-Encoding: gzip`. Each non-blank line is a record, '
        + 'numbered from 1 across all uploads of the job. The body is streamed and written in batches: an upload cut off keeps every complete line '
        + 'before the cut, and the job\'s `counts.total` says how many. A line that is not a JSON object, or longer than BODY_LIMIT_BYTES, is a '
        + 'failed record at step parse; a repeated external account number fails as `duplicate`. 400 `migration_job_not_open`, '
        + '`migration_job_too_large` (more than JOB_MAX_RECORDS; the records before are kept); 413 `payload_too_large` (JOB_UPLOAD_LIMIT_BYTES).',
      params: JobPathParams,
      consumes: [NDJSON],
      body: { type: 'string', description: 'Newline-delimited JSON: one record per line.' },
      response: { 200: UploadReply, 400: ErrorBody, 404: ErrorBody, 413: ErrorBody, 415: ErrorBody },
    },
    validatorCompiler: () => () => true,
  }, async (request) => {
    const caller = callerOf(request);
    const type = String(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== NDJSON) {
      throw new AppError('unsupported_media_type', `Upload records as ${NDJSON}, one record per line.`);
    }
    return jobs.uploadRecords(deps, caller, request.params.job_id, bodyStream(request));
  });

  for (const action of ['start', 'cancel', 'retry'] as const) {
    const docs = {
      start: ['startMigrationJob', 'Start the job (queued; scheduled while not_before is ahead)', '400 `migration_job_not_open`, `migration_job_empty`.'],
      cancel: ['cancelMigrationJob', 'Cancel the job', 'Records not started are cancelled; running ones finish, then the job is cancelled. 400 `migration_job_finished`.'],
      retry: ['retryMigrationJob', 'Retry the failed and cancelled records', 'They are pending again and the job is queued. Records that failed at upload (parse, duplicate) keep their verdict. 400 `migration_job_not_finished`.'],
    }[action];
    app.post<{ Params: JobPathParams }>(`/migration-jobs/:job_id/${action}/`, {
      schema: {
        tags: TAGS, operationId: docs[0], summary: docs[1], description: docs[2],
        params: JobPathParams,
        response: { 200: Job, 400: ErrorBody, 404: ErrorBody },
      },
    }, async (request) => {
      const caller = callerOf(request);
      const id = request.params.job_id;
      return action === 'start' ? jobs.startJob(deps, caller, id)
        : action === 'cancel' ? jobs.cancelJob(deps, caller, id) : jobs.retryJob(deps, caller, id);
    });
  }

  app.get<{ Params: JobPathParams; Querystring: RecordsQuery }>('/migration-jobs/:job_id/records/', {
    schema: {
      tags: TAGS, operationId: 'getMigrationJobRecords', summary: 'Record results in line order (NDJSON, or CSV)',
      description: 'An `application/x-ndjson` stream of record results, one per line; with `Accept: text/csv`, CSV with a header row: '
        + 'line, external_account_number, outcome, step, service_account_number, error_code, error_attr, error_detail, error_count (first error only).',
      params: JobPathParams,
      querystring: RecordsQuery,
      response: {
        200: {
          description: 'Record results in line order.',
          content: {
            [NDJSON]: { schema: RecordResult },
            'text/csv': { schema: { type: 'string', description: 'CSV with a header row.' } },
          },
        },
        400: ErrorBody, 404: ErrorBody,
      },
    },
  }, async (request, reply) => {
    const csv = /\btext\/csv\b/i.test(String(request.headers.accept ?? ''));
    const chunks = await jobs.streamResults(db, callerOf(request), request.params.job_id, request.query.outcome, csv ? 'csv' : 'ndjson');
    return reply.type(csv ? 'text/csv; charset=utf-8' : `${NDJSON}; charset=utf-8`).send(Readable.from(chunks));
  });
};

function bodyStream(request: FastifyRequest): AsyncIterable<Buffer> {
  const raw = request.body as NodeJS.ReadableStream;
  const encoding = String(request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return raw as AsyncIterable<Buffer>;
  if (encoding === 'gzip' || encoding === 'x-gzip') {
    // pipeline passes a failure of the request (a cut) on to the gunzip stream the service reads.
    return pipeline(raw as Readable, createGunzip(), () => {}) as AsyncIterable<Buffer>;
  }
  throw new AppError('unsupported_media_type', `Content-Encoding "${encoding}" is not supported; use gzip or none.`);
}
