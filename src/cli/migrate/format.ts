import type { Job } from './api-session.ts';

/**
 * A job's failed records: before its account existed (the line, or the account step), or on an
 * existing account; and by step, the records failing with each code (a record once per code it has).
 */
export interface FailureSplit { before_account: number; after_account: number; by_step: Record<string, Record<string, number>> }

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

export const recordsDone = (job: Job): number => job.counts.total - job.counts.pending - job.counts.running;

/**
 * How fast the job goes, from its real elapsed time (start to finish, or to now): under a minute,
 * what was done in how long (`53 records in 1 s`), never a per-minute rate extrapolated from seconds;
 * then records a minute (the service's recent rate while it runs, the whole run's once finished).
 */
export function pace(job: Job, now = Date.now()): string {
  if (!job.started_at) return 'not started';
  const done = recordsDone(job);
  const end = job.finished_at ? Date.parse(job.finished_at) : now;
  const seconds = Math.max(0, (end - Date.parse(job.started_at)) / 1000);
  if (seconds < 60) return `${number(done)} records in ${Math.max(1, Math.round(seconds))} s`;
  return `${number(Math.round(job.finished_at ? done / (seconds / 60) : job.records_per_minute))}/min`;
}

export const topErrors = (job: Job, limit = 3): string =>
  job.errors_by_code.slice(0, limit).map((e) => `${e.code} ${number(e.count)}`).join(', ');

/** The job's summary table (D12), printed when a watch ends. */
export function summary(job: Job, failuresFile: string | null, split?: FailureSplit): string {
  const rows: Array<[string, number]> = [
    ['succeeded', job.counts.succeeded], ['skipped', job.counts.skipped], ['failed', job.counts.failed],
    ['cancelled', job.counts.cancelled], ['pending', job.counts.pending], ['running', job.counts.running],
  ];
  const shown = rows.filter(([name, count]) => count > 0 || !['pending', 'running'].includes(name));
  const width = Math.max(...[...shown, ['total', job.counts.total] as const].map(([, c]) => number(c).length));
  const seconds = job.started_at && job.finished_at ? (Date.parse(job.finished_at) - Date.parse(job.started_at)) / 1000 : null;
  // A rate only for a run of a minute or more: a shorter one is said by its count and duration.
  const took = seconds === null ? '' : ` in ${duration(seconds)}${seconds >= 60 ? ` (${pace(job)})` : ''}`;
  const row = (name: string, count: number) => `  ${name.padEnd(10)} ${number(count).padStart(width)}`;
  const lines = [`Job ${job.id} ${job.state}${took}${job.dry_run ? ' (dry run)' : ''}`];
  for (const [name, count] of shown) {
    lines.push(row(name, count));
    if (name === 'failed' && split && count > 0) {
      lines.push(`${row('', split.before_account)}  before the account existed (the line, or the account step)`);
      lines.push(`${row('', split.after_account)}  on an existing account (a later step: part of its history)`);
    }
  }
  lines.push(row('total', job.counts.total));
  const steps = Object.entries(split?.by_step ?? {});
  if (steps.length > 0) {
    // Every failure, by the step that failed and its codes: what to fix before the real run.
    lines.push('Failures by step and code (each record under every code it has; top errors count its first only):');
    const stepWidth = Math.max(...steps.map(([step]) => step.length));
    for (const [step, codes] of steps) {
      const listed = Object.entries(codes).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1)).map(([code, n]) => `${code} ${number(n)}`);
      lines.push(`  ${step.padEnd(stepWidth)}  ${listed.join(', ')}`);
    }
  } else if (job.errors_by_code.length > 0) {
    lines.push(`Errors: ${topErrors(job, 10)}`);
  }
  if (failuresFile) lines.push(`Failed records: ${failuresFile}`);
  if (job.dry_run && job.state === 'completed') {
    lines.push('A pre-flight: nothing was written. The real run of this file, on a store that has not changed, gives each record this outcome.');
  }
  return `${lines.join('\n')}\n`;
}
