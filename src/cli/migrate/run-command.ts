import { stat } from 'node:fs/promises';
import { dataOf, UnreachableError, type ApiSession, type Job } from './api-session.ts';
import type { CommandContext, CommandResult } from './command-context.ts';
import { number, summary } from './format.ts';
import { countLines, lineAt, uploadRemaining, type UploadOutcome } from './upload.ts';
import { collectFailures, getJob, interruptOnCtrlC, watchJob } from './watch.ts';

// `run FILE (--supplier CODE --team NAME | --resume JOB)`: create (or reuse) a job, upload what it
// lacks, start it, watch it to the end, write the failures file and print the summary (D12).
export const EXIT_INTERRUPTED = 130;

/** --max-rate N: records a minute, as the service takes max_records_per_minute. */
export function maxRate(raw: string): number | undefined {
  const value = Number(raw);
  return /^\d+$/.test(raw) && value >= 1 && value <= 1_000_000 ? value : undefined;
}

export async function runFile(ctx: CommandContext, file: string): Promise<CommandResult> {
  const { session, flags } = ctx;
  const fileSize = (await stat(file)).size;
  let job: Job;
  if (flags.resume) {
    job = await getJob(session, flags.resume as string);
    const differs = job.state === 'open' ? await notTheUploadedFile(session, job, file) : null;
    if (differs) return ctx.refuse(`${differs}; nothing was uploaded: resume with the file as it was uploaded, or send this one in a new job`);
  } else {
    job = dataOf(await session.client.POST('/v1/data-import/migration-jobs/', {
      body: {
        import_supplier: flags.supplier as string, operations_team_name: flags.team as string,
        ...(flags['dry-run'] ? { dry_run: true } : {}),
        ...(flags['on-drift'] ? { on_drift: flags['on-drift'] as 'warn' | 'fail' } : {}),
        ...(flags['not-before'] ? { not_before: flags['not-before'] as string } : {}),
        ...(flags['not-after'] ? { not_after: flags['not-after'] as string } : {}),
        ...(flags['max-rate'] ? { max_records_per_minute: maxRate(flags['max-rate'] as string)! } : {}),
        // Sent as written: each figure is the service's to check, and a refusal names it.
        ...(ctx.controlTotals ? { control_totals: ctx.controlTotals as never } : {}),
      },
    }));
    ctx.note(`created job ${job.id} for supplier ${job.import_supplier}\n`);
  }

  const progress = ctx.progress();
  const interrupt = interruptOnCtrlC();
  try {
    let upload: UploadOutcome | null = null;
    if (job.state === 'open') {
      if (flags.resume) ctx.note(`resuming job ${job.id}: it holds ${number(job.counts.total)} records, so the first ${number(job.counts.total)} lines of ${file} are skipped\n`);
      try {
        upload = await uploadRemaining(session, job.id, file, (p) => progress.upload(p), interrupt.signal);
      } catch (error) {
        if (!interrupt.signal.aborted) {
          // The service went away for longer than the client's retries: the job keeps every complete
          // line it received and stays open. Say how to go on, then fail as before (exit 2).
          if (error instanceof UnreachableError) {
            progress.stop();
            ctx.note(`\nUpload stopped: job ${job.id} keeps the records the service received and stays open.\n`
              + `Resume with: ${ctx.hint(['run', file, '--resume', job.id])}\n`);
          }
          throw error;
        }
      }
      if (interrupt.signal.aborted) {
        // What the service says the job holds, never what this client believes it sent.
        const held = await getJob(session, job.id);
        const kept = upload?.total_records ?? held.counts.total;
        // The last progress line was the bytes read a few seconds ago: end with the records the service counted.
        progress.uploadStopped(upload?.received ?? held.counts.total - job.counts.total);
        progress.stop();
        ctx.note(`\nUpload interrupted: job ${job.id} keeps the ${number(kept)} records received and stays open.\n`
          + `Resume with: ${ctx.hint(['run', file, '--resume', job.id])}\n`);
        return { exit: EXIT_INTERRUPTED, json: { job: held, ...(upload ? { upload } : {}), interrupted: true }, text: '' };
      }
      upload = upload!;
      progress.uploaded(upload.received, fileSize);
      job = dataOf(await session.client.POST('/v1/data-import/migration-jobs/{job_id}/start/', { params: { path: { job_id: job.id } } }));
    } else {
      // A started job takes no more records: resuming it only makes sense if it has the whole file.
      const lines = await countLines(file);
      if (lines > job.counts.total) {
        progress.stop();
        return ctx.refuse(`job ${job.id} is ${job.state} with ${job.counts.total} of the ${lines} records of ${file}; `
          + 'it takes no more records: upload the rest in a new job');
      }
      ctx.note(`resuming job ${job.id}: it is ${job.state} and holds all ${number(lines)} records of ${file}; nothing to upload\n`);
    }

    const end = await watchJob(session, job.id, progress, ctx.pollMs, interrupt.signal);
    progress.stop();
    if (end.interrupted) return detached(ctx, end.job);
    return finish(ctx, end.job, file, upload);
  } finally {
    interrupt.release();
  }
}

/**
 * Why FILE is not the file the open job was uploaded from, or null. A resume skips as many lines as
 * the job holds, so a line added or removed before that point would send a line twice or never: the
 * job's last line must name the account FILE's line of that number names. One record read from the
 * service (records/search/ from that line), and FILE read up to that line.
 */
async function notTheUploadedFile(session: ApiSession, job: Job, file: string): Promise<string | null> {
  const held = job.counts.total;
  if (held === 0) return null;
  const page = dataOf(await session.client.GET('/v1/data-import/migration-jobs/{job_id}/records/search/', {
    params: { path: { job_id: job.id }, query: { after_line: held - 1, page_size: 1 } },
  }));
  const last = page.records[0];
  if (!last || last.line !== held) return null;
  const text = await lineAt(file, held);
  if (text === null) return `${file} has fewer than the ${number(held)} records job ${job.id} holds: it is not the file the job was uploaded from`;
  const wrongFile = 'it is not the file the job was uploaded from (or lines were added or removed before that one)';
  // A line the service could not read keeps no account number. When it was not JSON, or not a JSON
  // object, the file's line of that number must not be one either: one that is, is another line (the
  // bad line deleted from the file, the usual fix), and skipping past it would never send it. For
  // the other reasons (too long, not UTF-8, a key the service refuses) the client has nothing to compare.
  if (last.external_account_number === null && last.step === 'parse') {
    const unlike = UNREADABLE.get(last.errors[0]?.detail ?? '');
    if (!unlike?.test(text)) return null;
    return `line ${number(held)} of ${file} is ${unlike.what} where job ${job.id} has a line that is not: ${wrongFile}`;
  }
  const mine = accountNumberOf(text);
  if (mine === last.external_account_number) return null;
  const name = (account: string | null) => (account === null ? 'no account number' : `account "${account}"`);
  return `line ${number(held)} of ${file} has ${name(mine)} where job ${job.id} has ${name(last.external_account_number)}: ${wrongFile}`;
}

/** A JSON text's value, or undefined when the text is not JSON. */
function jsonOf(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** The service's words for a line it could not read, and how a line of the file shows it is not such a line. */
const UNREADABLE = new Map<string, { what: string; test: (text: string) => boolean }>([
  ['The line is not valid JSON.', { what: 'JSON', test: (text) => jsonOf(text) !== undefined }],
  ['The line is not a JSON object.', {
    what: 'a JSON object',
    test: (text) => { const json = jsonOf(text); return typeof json?.value === 'object' && json.value !== null && !Array.isArray(json.value); },
  }],
]);

/** A line's account.external_account_number as the service stores it: a string of at most 100 characters, else none. */
function accountNumberOf(text: string): string | null {
  try {
    const named = (JSON.parse(text) as { account?: { external_account_number?: unknown } } | null)?.account?.external_account_number;
    return typeof named === 'string' && named.length <= 100 ? named : null;
  } catch {
    return null;
  }
}

/** `watch JOB`: re-attach to a job's progress until it ends. */
export async function watchCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const progress = ctx.progress();
  const interrupt = interruptOnCtrlC();
  try {
    const end = await watchJob(ctx.session, jobId, progress, ctx.pollMs, interrupt.signal);
    progress.stop();
    return end.interrupted ? detached(ctx, end.job) : finish(ctx, end.job, null, null);
  } finally {
    interrupt.release();
  }
}

function detached(ctx: CommandContext, job: Job): CommandResult {
  ctx.note(`\nStopped watching. Job ${job.id} goes on running on the service.\nRe-attach with: ${ctx.hint(['watch', job.id])}\n`);
  return { exit: EXIT_INTERRUPTED, json: { job, interrupted: true }, text: '' };
}

async function finish(ctx: CommandContext, job: Job, file: string | null, upload: UploadOutcome | null): Promise<CommandResult> {
  if (job.state === 'open') {
    return ctx.refuse(`job ${job.id} is open: it was never started; upload its records and start it with `
      + ctx.hint(['run', 'FILE', '--resume', job.id]));
  }
  const failures = job.counts.failed > 0 ? await collectFailures(ctx.session, job.id, file) : null;
  const failuresFile = failures?.path ?? null;
  const allGood = job.counts.succeeded + job.counts.skipped === job.counts.total;
  const hint = !file && job.counts.failed > 0 ? `Failed records: ${ctx.hint(['results', job.id, '--outcome', 'failed'])}\n` : '';
  return {
    exit: allGood ? 0 : 1,
    json: { job, ...(upload ? { upload } : {}), failures_file: failuresFile, ...(failures ? { failed: failures.split } : {}) },
    text: summary(job, failuresFile, failures?.split) + hint,
  };
}