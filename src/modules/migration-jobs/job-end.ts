import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Events } from '../events/index.ts';
import * as repo from './migration-jobs.repository.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** What a job's view shows of its records: its counters summed, its failures by code and its warned records counted (three reads at once). */
export async function jobFigures(db: Db, jobId: string): Promise<repo.JobFigures> {
  const [counts, errors, warned] = await Promise.all([repo.countsOf(db, jobId), repo.errorsByCode(db, jobId), repo.countWithWarnings(db, jobId)]);
  return { counts, errors_by_code: errors, records_with_warnings: warned };
}

export const RATE_WINDOW_MINUTES = 5;
const MIN_RATE_WINDOW_MINUTES = 0.5;

/**
 * The minutes `records_per_minute` is taken over: the last five, or the time since the job began
 * running when that is shorter (not less than half a minute), so a young job shows its real rate and
 * ETA instead of its first minute's records spread over five.
 */
function rateWindowMinutes(row: repo.JobRow): number {
  const began = Math.max(row.started_at?.getTime() ?? 0, row.not_before?.getTime() ?? 0);
  if (began === 0) return RATE_WINDOW_MINUTES;
  return Math.min(RATE_WINDOW_MINUTES, Math.max(MIN_RATE_WINDOW_MINUTES, (Date.now() - began) / 60_000));
}

/** Records run to an outcome per minute, up to now, over rateWindowMinutes (one decimal). */
export async function recentRate(db: Db, row: repo.JobRow): Promise<number> {
  const recent = await repo.finishedSince(db, row.id, RATE_WINDOW_MINUTES);
  return Math.round((recent / rateWindowMinutes(row)) * 10) / 10;
}

/**
 * Ends the job, in the transaction that finds no record of it pending or running: its state, its
 * figures kept on its row (its records do not change again until a retry, which clears them, so its
 * view no longer counts them) with its rate at its end (a finished job's view shows that, rather than
 * one that falls to 0 as its last five minutes pass), and its end as an event (D13) with the same counts.
 */
export async function endJob(events: Events, trx: Transaction<Database>, job: repo.JobRow, how: 'completed' | 'cancelled'): Promise<void> {
  const figures: repo.JobFigures = { ...(await jobFigures(trx, job.id)), records_per_minute: await recentRate(trx, job) };
  await repo.markEnded(trx, job.id, how, figures);
  await events.record(trx, [{
    supplierId: job.supplier_id, type: how === 'completed' ? 'migration_job.completed' : 'migration_job.cancelled',
    externalAccountNumber: null, data: { job_id: job.id, counts: { ...figures.counts } },
  }]);
}
