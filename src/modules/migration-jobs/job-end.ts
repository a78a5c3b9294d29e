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

/**
 * Ends the job, in the transaction that finds no record of it pending or running: its state, its
 * figures kept on its row (its records do not change again until a retry, which clears them, so its
 * view no longer counts them) and its end as an event (D13) with the same counts.
 */
export async function endJob(events: Events, trx: Transaction<Database>, job: repo.JobRow, how: 'completed' | 'cancelled'): Promise<void> {
  const figures = await jobFigures(trx, job.id);
  await repo.markEnded(trx, job.id, how, figures);
  await events.record(trx, [{
    supplierId: job.supplier_id, type: how === 'completed' ? 'migration_job.completed' : 'migration_job.cancelled',
    externalAccountNumber: null, data: { job_id: job.id, counts: { ...figures.counts } },
  }]);
}
