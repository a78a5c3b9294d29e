import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Events } from '../events/index.ts';
import * as repo from './migration-jobs.repository.ts';

/** The job's end as an event (D13), in the transaction that ends it. */
export async function recordJobEnded(events: Events, trx: Transaction<Database>, job: repo.JobRow, how: 'completed' | 'cancelled'): Promise<void> {
  const counts = await repo.countsOf(trx, job.id);
  await events.record(trx, [{
    supplierId: job.supplier_id, type: how === 'completed' ? 'migration_job.completed' : 'migration_job.cancelled',
    externalAccountNumber: null, data: { job_id: job.id, counts: { ...counts } },
  }]);
}
