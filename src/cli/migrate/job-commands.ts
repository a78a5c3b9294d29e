import { Writable } from 'node:stream';
import { dataOf, type Job, type RecordResult } from './api-session.ts';
import type { CommandContext, CommandResult } from './command-context.ts';
import { number, summary } from './format.ts';
import { collectFailures, getJob, streamResults } from './watch.ts';

// The one-call commands of D12: each is one endpoint, printed for a person or as --json.
const jobPath = (jobId: string) => ({ params: { path: { job_id: jobId } } });

export async function statusCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const job = await getJob(ctx.session, jobId);
  if (ctx.flags.json || job.counts.failed === 0) return { exit: 0, json: job, text: summary(job, null) };
  const { split } = await collectFailures(ctx.session, jobId, null);
  return { exit: 0, json: job, text: summary(job, null, split) };
}

export async function cancelCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const job = dataOf(await ctx.session.client.POST('/v1/data-import/migration-jobs/{job_id}/cancel/', jobPath(jobId)));
  return { exit: 0, json: job, text: `Job ${job.id} is ${job.state}: records not started are cancelled.\n` };
}

export async function retryCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const job = dataOf(await ctx.session.client.POST('/v1/data-import/migration-jobs/{job_id}/retry/', jobPath(jobId)));
  return {
    exit: 0, json: job,
    text: `Job ${job.id} is ${job.state}: ${number(job.counts.pending)} records to run again.\nFollow it with: ${ctx.hint(['watch', job.id])}\n`,
  };
}

export async function pauseCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const job = dataOf(await ctx.session.client.POST('/v1/data-import/migration-jobs/{job_id}/pause/', jobPath(jobId)));
  return {
    exit: 0, json: job,
    text: `Job ${job.id} is ${job.state}: no record starts until it is resumed; ${number(job.counts.running)} running finish.
`
      + `Resume it with: import-migrate resume ${job.id}
`,
  };
}

export async function resumeCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const job = dataOf(await ctx.session.client.POST('/v1/data-import/migration-jobs/{job_id}/resume/', jobPath(jobId)));
  return {
    exit: 0, json: job,
    text: `Job ${job.id} is ${job.state}: ${number(job.counts.pending)} records left to run.
Follow it with: import-migrate watch ${job.id}
`,
  };
}

/** NDJSON (or CSV) streamed straight to stdout; with --json, one object holding the parsed results. */
export async function resultsCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const outcome = ctx.flags.outcome as string | undefined;
  if (!ctx.flags.json) {
    await streamResults(ctx.session, jobId, ctx.stdout, { outcome, csv: Boolean(ctx.flags.csv) });
    return { exit: 0, json: {}, text: '' };
  }
  let text = '';
  const sink = new Writable({ write(chunk, _encoding, done) { text += String(chunk); done(); } });
  await streamResults(ctx.session, jobId, sink, { outcome });
  const results = text.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as RecordResult);
  return { exit: 0, json: { job_id: jobId, results }, text: '' };
}

export async function jobsCommand(ctx: CommandContext): Promise<CommandResult> {
  const jobs: Job[] = dataOf(await ctx.session.client.GET('/v1/data-import/migration-jobs/', {
    params: { query: { import_supplier: ctx.flags.supplier as string, page_size: 1000 } },
  }));
  const rows = jobs.map((j) => [j.id, j.state, j.created_at, number(j.counts.total), number(j.counts.failed)]);
  const header = ['id', 'state', 'created_at', 'total', 'failed'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const text = jobs.length === 0 ? `No migration jobs for supplier ${String(ctx.flags.supplier)}.\n`
    : `${[line(header), ...rows.map(line)].join('\n')}\n`;
  return { exit: 0, json: { jobs }, text };
}
