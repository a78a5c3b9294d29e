import type { Job } from './api-session.ts';

// How numbers, sizes and durations read in import-migrate's output. Fixed to en-GB grouping so that
// output (and the tests that read it) does not change with the machine's locale.
export const number = (value: number): string => value.toLocaleString('en-GB');

export function bytes(value: number): string {
  if (value < 1024) return `${value} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let size = value / 1024;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit++; }
  return `${size.toFixed(1)} ${units[unit]}`;
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

export const topErrors = (job: Job, limit = 3): string =>
  job.errors_by_code.slice(0, limit).map((e) => `${e.code} ${number(e.count)}`).join(', ');

/** The job's summary table (D12), printed when a watch ends. */
export function summary(job: Job, failuresFile: string | null): string {
  const rows: Array<[string, number]> = [
    ['succeeded', job.counts.succeeded], ['skipped', job.counts.skipped], ['failed', job.counts.failed],
    ['cancelled', job.counts.cancelled], ['pending', job.counts.pending], ['running', job.counts.running],
  ];
  const shown = rows.filter(([name, count]) => count > 0 || !['pending', 'running'].includes(name));
  const width = Math.max(...[...shown, ['total', job.counts.total] as const].map(([, c]) => number(c).length));
  const took = job.started_at && job.finished_at
    ? ` in ${duration((Date.parse(job.finished_at) - Date.parse(job.started_at)) / 1000)}` : '';
  const lines = [
    `Job ${job.id} ${job.state}${took}${job.dry_run ? ' (dry run)' : ''}`,
    ...shown.map(([name, count]) => `  ${name.padEnd(10)} ${number(count).padStart(width)}`),
    `  ${'total'.padEnd(10)} ${number(job.counts.total).padStart(width)}`,
  ];
  if (job.errors_by_code.length > 0) lines.push(`Errors: ${topErrors(job, 10)}`);
  if (failuresFile) lines.push(`Failed records: ${failuresFile}`);
  return `${lines.join('\n')}\n`;
}
