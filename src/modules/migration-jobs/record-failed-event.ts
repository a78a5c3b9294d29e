import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Events, NewEvent } from '../events/index.ts';
import * as repo from './migration-jobs.repository.ts';
import type { RecordError, RecordStep, RecordWarning } from './migration-jobs.schemas.ts';

// Every record a job fails, at any step including parse, is a `migration_record.failed` event, so a
// webhook consumer hears about every reject without reading the results. The event commits with the
// record's failed outcome: at upload in writeBatch's transaction, from a worker in finishFailedRecord's.

/** The errors an event carries at most: the record's results hold them all. */
export const EVENT_ERRORS = 5;

export interface FailedRecord { line: number; externalAccountNumber: string | null; step: RecordStep; errors: readonly RecordError[] }

export function recordFailedEvent(supplierId: number, jobId: string, failed: FailedRecord): NewEvent {
  return {
    supplierId, type: 'migration_record.failed', externalAccountNumber: failed.externalAccountNumber,
    data: {
      job_id: jobId, line: failed.line, external_account_number: failed.externalAccountNumber, step: failed.step,
      errors: failed.errors.slice(0, EVENT_ERRORS).map(({ code, detail, attr }) => ({ code, detail, attr })),
    },
  };
}

/**
 * finishRecord for a failure: the outcome and its event in one transaction. The event is written only
 * when this statement gave the outcome (the record was still running), so a record finished twice
 * (a worker and the dead-letter queue) is reported once.
 */
export async function finishFailedRecord(
  { db, events }: { db: Kysely<Database>; events: Events }, job: { id: string; supplierId: number },
  failed: FailedRecord & { created: boolean | null; serviceAccountNumber: string | null; warnings?: RecordWarning[] },
): Promise<{ othersPending: boolean }> {
  return db.transaction().execute(async (trx) => {
    const done = await repo.finishRecord(trx, job.id, failed.line, {
      outcome: 'failed', step: failed.step, created: failed.created, serviceAccountNumber: failed.serviceAccountNumber,
      errors: [...failed.errors], warnings: failed.warnings,
    });
    if (done.finished) await events.record(trx, [recordFailedEvent(job.supplierId, job.id, failed)]);
    return { othersPending: done.othersPending };
  });
}
