import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { prefersCsv } from '../../http/accept.ts';
import { callerOf } from '../../http/auth.ts';
import { AppError } from '../../core/errors.ts';
import { BAD_CURSOR } from '../../core/cursor.ts';
import { exemptFromRequestDeadline } from '../../http/request-deadline.ts';
import { compileRequestValidator } from '../../http/validator-compiler.ts';
import type { ServiceDeps } from '../../http/route-deps.ts';
import type { Events } from '../events/index.ts';
import { answer, LINK_NEXT, refusal } from '../../http/openapi.ts';
import { IMPORT_SUPPLIER_NOT_FOUND } from '../account-data/index.ts';
import {
  ACTION_REFUSED, CREATE_JOB, JOB, JOB_NOT_FOUND, JOB_NOT_OPEN, RECORD_RESULT, THROTTLE_JOB, THROTTLE_REFUSED, UPLOAD_CUT_OFF, UPLOAD_RECORDS,
  UPLOAD_TOO_LARGE, UPLOADED,
} from './migration-jobs.examples.ts';
import {
  CreateJobBody, Job, JobList, JobPathParams, ListJobsQuery, RecordResult, RecordsQuery, UpdateJobBody, UploadReply,
} from './migration-jobs.schemas.ts';
import * as jobs from './migration-jobs.service.ts';
import { idleLimited } from './upload-idle.ts';
import { gunzipped } from './upload-gzip.ts';
import { readAhead } from './upload-read-ahead.ts';
import { MAX_RECORD_DEPTH } from './record-line.ts';

const TAGS = ['Migration jobs'];
const NDJSON = 'application/x-ndjson';
const ACTIONS = {
  start: {
    operationId: 'startMigrationJob', summary: 'Start the job (queued; scheduled while not_before is ahead)',
    description: 'The records are worked through in the background, by every instance of the service.',
    refusals: ['migration_job_not_open', 'migration_job_empty'], refused: ACTION_REFUSED.start, state: 'queued',
  },
  cancel: {
    operationId: 'cancelMigrationJob', summary: 'Cancel the job',
    description: 'Records not started are cancelled; running ones finish, then the job is cancelled.',
    refusals: ['migration_job_finished'], refused: ACTION_REFUSED.cancel, state: 'cancelled',
  },
  retry: {
    operationId: 'retryMigrationJob', summary: 'Retry the failed and cancelled records',
    description: 'They are pending again and the job is queued. Records that failed at upload (parse, duplicate) keep their verdict. '
      + 'A job whose not_after has passed cannot be retried (`migration_job_window_closed`): run its records in a new job.',
    refusals: ['migration_job_not_finished', 'migration_job_window_closed'], refused: ACTION_REFUSED.retry, state: 'queued',
  },
  pause: {
    operationId: 'pauseMigrationJob', summary: 'Pause the job (state paused)',
    description: 'No record of the job starts until it is resumed; records already running finish. Records waiting on the queue '
      + 'wait without using up their retries. Pausing a paused job changes nothing; a completed or cancelled job cannot be paused.',
    refusals: ['migration_job_finished'], refused: ACTION_REFUSED.pause, state: 'paused',
  },
  resume: {
    operationId: 'resumeMigrationJob', summary: 'Resume a paused job',
    description: 'The job goes on from where it was: the records not started are sent to the workers again. '
      + '`migration_job_not_paused`: the job was not paused with pause/ (a job shown paused because its supplier is paused goes on '
      + 'when the supplier is ongoing again); `migration_job_finished`: it is completed or cancelled.',
    refusals: ['migration_job_not_paused', 'migration_job_finished'], refused: ACTION_REFUSED.resume, state: 'running',
  },
} as const;
const RUN = { start: jobs.startJob, cancel: jobs.cancelJob, retry: jobs.retryJob, pause: jobs.pauseJob, resume: jobs.resumeJob } as const;
// The refusals every route of one job shares (here and in the job's other route plugins).
/** 404: the job is unknown, or another organisation's. */
export const NO_JOB = refusal(['not_found'], JOB_NOT_FOUND, { note: 'No such job of the caller\'s organisation.' });
/** 400: the job id is longer than 100 characters. */
export const JOB_ID_TOO_LONG = refusal(['invalid'], { detail: 'The request failed validation.', code: 'invalid', errors: [
  { detail: 'Ensure this field has no more than 100 characters.', code: 'max_length', attr: 'job_id' }] },
{ note: 'The job id is longer than 100 characters.' });

// Migration jobs (D11). The upload is not parsed by Fastify: its parser hands the raw request stream
// to the service, which reads it line by line (gunzipped first with Content-Encoding: gzip).
export const migrationJobsRoutes: FastifyPluginAsync<ServiceDeps & { events: Events }> = async (plugin, { db, queue, events, clock, config }) => {
  const app = plugin.withTypeProvider<TypeBoxTypeProvider>();
  const deps: jobs.JobsDeps = { db, queue, events, clock, config };
  app.addContentTypeParser(NDJSON, (_request, payload, done) => done(null, payload));

  app.post('/migration-jobs/', {
    schema: {
      tags: TAGS, operationId: 'createMigrationJob', summary: 'Create a migration job (state open)',
      description: 'A job belongs to one import supplier of the caller. Upload its records, then start it. A paused supplier '
        + 'may have jobs: they wait until it is ongoing again.',
      body: CreateJobBody,
      requestExample: CREATE_JOB,
      response: {
        201: answer(Job, 'The job, open for uploads.', { ...JOB, counts: { ...JOB.counts, total: 0, pending: 0 } }),
        400: refusal(['invalid', 'parse_error', 'import_supplier_not_found', 'import_supplier_complete', 'operations_team_not_found'],
          IMPORT_SUPPLIER_NOT_FOUND),
      },
    },
  }, async (request, reply) => reply.code(201).send(await jobs.createJob(db, clock, callerOf(request), request.body)));

  app.get('/migration-jobs/', {
    schema: {
      tags: TAGS, operationId: 'listMigrationJobs', summary: 'The supplier\'s migration jobs, newest first',
      description: 'Keyset paging: `page_size` (default 100), then follow the `Link` header (`cursor`).',
      querystring: ListJobsQuery,
      response: {
        200: answer(JobList, 'One page of the supplier\'s jobs, newest first.', [JOB], { Link: LINK_NEXT }),
        400: refusal(['invalid'], BAD_CURSOR, { note: 'A query parameter is out of its bounds, or the cursor is not one the service gave.' }),
      },
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

  app.get('/migration-jobs/:job_id/', {
    schema: {
      tags: TAGS, operationId: 'getMigrationJob', summary: 'A migration job with its counts and progress',
      description: 'Its state, its records counted by outcome, the first error code of its failed records, and its pace.',
      params: JobPathParams,
      response: {
        200: answer(Job, 'The job.', JOB),
        400: JOB_ID_TOO_LONG,
        404: NO_JOB,
      },
    },
  }, async (request) => jobs.getJob(db, callerOf(request), request.params.job_id));

  app.post('/migration-jobs/:job_id/records/', {
    schema: {
      tags: TAGS, operationId: 'uploadMigrationJobRecords', summary: 'Upload records (NDJSON, one record per line)',
      description: 'Content-Type `application/x-ndjson`, optionally `Content-Encoding: gzip`. Each non-blank line is a record, '
        + 'numbered from 1 across all uploads of the job: `{"account": {...}, "statements": [...], "transactions": [...], "notes": [...], '
        + '"payment_instruction": {...}}`, where only `account` is required and each other part takes the items of its endpoint. '
        + 'The body is streamed and written in batches: an upload cut off keeps every complete line before the cut, and the job\'s '
        + '`counts.total` says how many. A line that is not a JSON object, or longer than the body limit of a single request, is a '
        + `failed record at step parse, as is one that is not valid UTF-8, nests more than ${MAX_RECORD_DEPTH} levels or holds text the store `
        + 'cannot keep (NUL, an unpaired surrogate); a repeated external account number fails as `duplicate`. An upload may take as long as it '
        + 'needs, but one that receives no byte for a while (60 s by default) is cut off.',
      params: JobPathParams,
      consumes: [NDJSON],
      body: { type: 'string', maxLength: config.jobUploadLimitBytes, description: 'Newline-delimited JSON: one record per line. The body limit is that of an upload (its bytes, once decompressed).' },
      requestExample: UPLOAD_RECORDS,
      response: {
        200: answer(UploadReply, 'The records were stored, pending until the job is started.', UPLOADED),
        400: refusal(['migration_job_not_open', 'migration_job_too_large', 'parse_error', 'invalid'], JOB_NOT_OPEN, {
          note: '`migration_job_not_open`: the job is past open; when it was started or cancelled while this upload ran, adds `received` and '
            + '`total_records` (the records written before are kept). '
            + '`migration_job_too_large`: the job would hold more records than a job may; the records before are kept. '
            + '`parse_error`: the body is labelled gzip but is not gzip, or its gzip stream was cut short; adds `received` and '
            + '`total_records` (the complete lines before the fault are kept).',
        }),
        404: NO_JOB,
        408: refusal(['request_timeout'], UPLOAD_CUT_OFF, { note: 'Adds `received` and `total_records`: send the lines after those.' }),
        413: refusal(['payload_too_large'], UPLOAD_TOO_LARGE, {
          note: 'The upload is larger than an upload may be, or holds more blank lines than a job may hold records; adds `received` and `total_records`.',
        }),
        415: refusal(['unsupported_media_type'], { detail: 'Upload records as application/x-ndjson, one record per line.', code: 'unsupported_media_type' }),
      },
    },
    // The body is a stream the handler reads itself; the job id is judged as on every route.
    validatorCompiler: (route) => (route.httpPart === 'body' ? () => true : compileRequestValidator(route)),
    // Runs after the auth guard: only an authenticated upload outlives REQUEST_TIMEOUT_MS. The type
    // is judged here, before any body parser: a type with none (text/plain, none at all) would
    // otherwise be refused with the JSON routes' advice.
    onRequest: (request, reply, done) => {
      exemptFromRequestDeadline(request);
      const type = String(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type === NDJSON) return done();
      // The body will not be read: close the connection after the answer.
      void reply.header('connection', 'close');
      done(new AppError('unsupported_media_type', `Upload records as ${NDJSON}, one record per line.`));
    },
  }, async (request, reply) => {
    try {
      const caller = callerOf(request);
      return await jobs.uploadRecords(deps, caller, request.params.job_id, bodyStream(request, config.uploadIdleTimeoutSeconds * 1000));
    } catch (error) {
      // The rest of the body will not be read: close the connection after the answer, rather than
      // leave it holding a half-read request.
      if (!request.raw.complete) void reply.header('connection', 'close');
      throw error;
    }
  });

  app.patch('/migration-jobs/:job_id/', {
    schema: {
      tags: TAGS, operationId: 'updateMigrationJob', summary: 'Throttle the job (or lift its throttle)',
      description: '`max_records_per_minute`: at most this many of the job\'s records start a minute, spread evenly; `null` lifts '
        + 'the throttle. It takes effect at once, on a running job too, on every instance, and holds for a retry.',
      params: JobPathParams,
      body: UpdateJobBody,
      requestExample: THROTTLE_JOB,
      response: {
        200: answer(Job, 'The job, with its new throttle.', { ...JOB, ...THROTTLE_JOB }),
        400: refusal(['invalid', 'parse_error'], THROTTLE_REFUSED, {
          note: '`max_records_per_minute` is missing, not a whole number from 1 to 1000000 or null, or another field is sent.',
        }),
        404: NO_JOB,
      },
    },
  }, async (request) => jobs.updateJob(deps, callerOf(request), request.params.job_id, request.body));

  for (const action of ['start', 'cancel', 'retry', 'pause', 'resume'] as const) {
    const docs = ACTIONS[action];
    app.post(`/migration-jobs/:job_id/${action}/`, {
      // Cancelling or retrying is one statement over every record of the job.
      config: { oneAtATime: action === 'cancel' || action === 'retry' },
      schema: {
        tags: TAGS, operationId: docs.operationId, summary: docs.summary, description: docs.description,
        params: JobPathParams,
        response: {
          200: answer(Job, `The job, now ${docs.state}.`, { ...JOB, state: docs.state, paused: docs.state === 'paused' }),
          400: refusal(['invalid', ...docs.refusals], docs.refused, { note: '`invalid`: the job id is longer than 100 characters.' }),
          404: NO_JOB,
        },
      },
    }, async (request) => RUN[action](deps, callerOf(request), request.params.job_id));
  }

  app.get('/migration-jobs/:job_id/records/', {
    schema: {
      tags: TAGS, operationId: 'listMigrationJobRecords', summary: 'Record results in line order (NDJSON, or CSV)',
      description: 'An `application/x-ndjson` stream of record results, one per line; with `Accept: text/csv`, CSV with a header row: '
        + 'line, external_account_number, outcome, step, service_account_number, error_code, error_attr, error_detail, error_count (first error only). '
        + 'A CSV text cell beginning with `=`, `+`, `-`, `@`, tab or carriage return is written with a leading `\'` (no formula runs when a spreadsheet opens it).',
      params: JobPathParams,
      querystring: RecordsQuery,
      response: {
        200: answer({
          content: {
            [NDJSON]: { schema: RecordResult },
            'text/csv': { schema: { type: 'string', description: 'CSV with a header row.' } },
          },
        }, 'Record results in line order: one JSON object per line, or CSV rows.', RECORD_RESULT),
        400: refusal(['invalid'], { detail: 'The request failed validation.', code: 'invalid', errors: [
          { detail: '"done" is not a valid choice. Allowed: pending, running, succeeded, skipped, failed, cancelled.', code: 'invalid_choice', attr: 'outcome' }] },
        { note: '`outcome` is not one of the outcomes, or the job id is longer than 100 characters.' }),
        404: NO_JOB,
      },
    },
  }, async (request, reply) => {
    const csv = prefersCsv(request.headers.accept);
    const chunks = await jobs.streamResults(db, callerOf(request), request.params.job_id, request.query.outcome, csv ? 'csv' : 'ndjson');
    return reply.type(csv ? 'text/csv; charset=utf-8' : `${NDJSON}; charset=utf-8`).send(Readable.from(chunks));
  });
};

/** The upload's bytes (inflated with gzip), failing with UploadStalled when the client stops sending for `idleMs`. */
function bodyStream(request: FastifyRequest, idleMs: number): AsyncIterable<Buffer> {
  // Read ahead from now: the lines that arrive while the job is looked up are kept even if the client
  // then closes the connection.
  const raw = idleLimited(readAhead(request.body as Readable), idleMs);
  const encoding = String(request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return raw;
  if (encoding === 'gzip' || encoding === 'x-gzip') return gunzipped(raw);
  throw new AppError('unsupported_media_type', `Content-Encoding "${encoding}" is not supported; use gzip or none.`);
}
