import { createWriteStream } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { dataOf, type ApiSession, type Job, type RecordResult } from './api-session.ts';
import type { FailureSplit } from './format.ts';
import type { Progress } from './progress.ts';

// Following a job to its end by polling GET migration-jobs/<id>/ (D12). Ctrl-C stops the watching
// only: the job runs on the service, so the user is told how to re-attach.
export const FINISHED_STATES: ReadonlySet<string> = new Set(['completed', 'cancelled']);

export interface WatchEnd { job: Job; interrupted: boolean }

export async function getJob(session: ApiSession, jobId: string, signal?: AbortSignal): Promise<Job> {
  return dataOf(await session.client.GET('/v1/data-import/migration-jobs/{job_id}/', { params: { path: { job_id: jobId } }, signal }));
}

export async function watchJob(session: ApiSession, jobId: string, progress: Progress, pollMs: number, interrupt: AbortSignal): Promise<WatchEnd> {
  let job = await getJob(session, jobId);
  progress.job(job);
  // An open job has not been started: nothing will change until someone uploads and starts it.
  while (!FINISHED_STATES.has(job.state) && job.state !== 'open') {
    if (await pause(pollMs, interrupt)) return { job, interrupted: true };
    try {
      // A busy service can take long to answer: Ctrl-C must not wait for it.
      job = await getJob(session, jobId, interrupt);
    } catch (error) {
      if (interrupt.aborted) return { job, interrupted: true };
      throw error;
    }
    progress.job(job);
  }
  return { job, interrupted: false };
}

/** Resolves true when interrupted before the time is up. */
function pause(ms: number, interrupt: AbortSignal): Promise<boolean> {
  if (interrupt.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => { interrupt.removeEventListener('abort', onAbort); resolve(false); }, ms);
    const onAbort = () => { clearTimeout(timer); resolve(true); };
    interrupt.addEventListener('abort', onAbort, { once: true });
  });
}

/** A signal aborted by the first Ctrl-C (SIGINT) until `release`; a second Ctrl-C ends the process. */
export function interruptOnCtrlC(): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  return { signal: controller.signal, release: () => process.off('SIGINT', onSigint) };
}

/** Streams the job's results of one outcome (NDJSON, or CSV with a header row) into `target`. */
export async function streamResults(
  session: ApiSession, jobId: string, target: NodeJS.WritableStream, options: { outcome?: string; csv?: boolean },
): Promise<void> {
  const result = await session.client.GET('/v1/data-import/migration-jobs/{job_id}/records/', {
    params: { path: { job_id: jobId }, query: options.outcome ? { outcome: options.outcome as never } : {} },
    headers: { accept: options.csv ? 'text/csv' : 'application/x-ndjson' },
    parseAs: 'stream',
  });
  const body = dataOf(result as { data?: unknown; error?: unknown; response: Response }) as ReadableStream<Uint8Array> | undefined;
  if (!body) return;
  await pipeline(Readable.fromWeb(body as never), target, { end: target !== process.stdout });
}

/**
 * Failed records split by how far they got: before the account existed (the line could not be read,
 * or the account step failed), or on an account that exists (or, in a pre-flight, would), where a
 * later step (part of its history) failed.
 */

/**
 * Reads the job's failed results once: counts them by FailureSplit and, given the run's FILE, writes
 * them to FILE.<job id>.failed.ndjson (returned as `path`).
 */
export async function collectFailures(session: ApiSession, jobId: string, file: string | null): Promise<{ path: string | null; split: FailureSplit }> {
  const path = file ? `${file}.${jobId}.failed.ndjson` : null;
  const out = path ? createWriteStream(path) : null;
  const split: FailureSplit = { before_account: 0, after_account: 0, by_step: {} };
  const steps = ['parse', 'account', 'statements', 'transactions', 'notes', 'payment_instruction'];
  let partial = '';
  const count = (line: string) => {
    if (line.trim() === '') return;
    const result = JSON.parse(line) as RecordResult;
    // By the step alone: a record of a pre-flight has no service account number even when its account
    // step passed (nothing is kept), and its split must be the real run's.
    if (result.step === null || result.step === 'parse' || result.step === 'account') split.before_account++;
    else split.after_account++;
    const codes = (split.by_step[result.step ?? 'account'] ??= {});
    for (const code of new Set(result.errors.map((e) => e.code))) codes[code] = (codes[code] ?? 0) + 1;
  };
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      lines.forEach(count);
      if (out) out.write(chunk, () => done());
      else done();
    },
    final(done) {
      count(partial);
      if (out) out.end(() => done());
      else done();
    },
  });
  await streamResults(session, jobId, sink, { outcome: 'failed' });
  // In the order the steps run, so the table reads as the records went.
  split.by_step = Object.fromEntries(Object.entries(split.by_step).sort(([a], [b]) => steps.indexOf(a) - steps.indexOf(b)));
  return { path, split };
}
