import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { components } from '../../client/api-types.ts';
import { dataOf, type ApiSession } from './api-session.ts';
import type { CommandContext, CommandResult } from './command-context.ts';
import { number } from './format.ts';

// import-migrate reconcile: the job's reconciliation as a table, its exceptions written with --csv.
// Exit 0 only when the book balanced; a job that differs or has not finished is 1, so a script can
// gate the go-live on it.
type Report = components['schemas']['MigrationJobReconciliation'];

const jobPath = (jobId: string) => ({ params: { path: { job_id: jobId } } });

export async function reconcileCommand(ctx: CommandContext, jobId: string): Promise<CommandResult> {
  const report: Report = dataOf(await ctx.session.client.GET('/v1/data-import/migration-jobs/{job_id}/reconciliation/', jobPath(jobId)));
  const csv = ctx.flags.csv as string | undefined;
  if (csv) await writeExceptions(ctx.session, jobId, csv);
  return { exit: report.verdict === 'balanced' ? 0 : 1, json: report, text: reconciliationTable(report, csv ?? null) };
}

async function writeExceptions(session: ApiSession, jobId: string, path: string): Promise<void> {
  const result = await session.client.GET('/v1/data-import/migration-jobs/{job_id}/reconciliation/exceptions/', {
    ...jobPath(jobId), headers: { accept: 'text/csv' }, parseAs: 'stream',
  });
  const body = dataOf(result as { data?: unknown; error?: unknown; response: Response }) as ReadableStream<Uint8Array> | undefined;
  await pipeline(body ? Readable.fromWeb(body as never) : Readable.from([]), createWriteStream(path));
}

const figure = (value: number | string | null): string => (value === null ? '-' : typeof value === 'number' ? number(value) : value);

export function reconciliationTable(report: Report, csvFile: string | null): string {
  const header = ['measure', 'control', 'file', 'migrated', 'verdict'];
  const rows = report.measures.map((m) => [m.measure, figure(m.control), figure(m.file), figure(m.migrated), m.verdict]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => (i >= 1 && i <= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd()}`;
  const file = report.file;
  const lines = [
    `Job ${report.job_id} (${report.import_supplier}) ${report.job_state}: ${report.verdict.toUpperCase()}`,
    `File: ${number(file.lines)} lines (${number(file.unparsable_lines)} unparsable), sha256 ${file.sha256 ?? 'unknown'}`
      + `${report.uploaded_by ? `, uploaded by ${report.uploaded_by}` : ''}`,
    line(header),
    ...rows.map(line),
    `Exceptions: ${number(report.exceptions)}${csvFile ? ` (written to ${csvFile})`
      : report.exceptions > 0 ? ` (import-migrate reconcile ${report.job_id} --csv FILE writes them)` : ''}`,
  ];
  return `${lines.join('\n')}\n`;
}
