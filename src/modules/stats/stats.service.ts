import type { Kysely } from 'kysely';
import type { Caller } from '../../core/caller.ts';
import { AppError } from '../../core/errors.ts';
import type { Database } from '../../db/schema.ts';
import { unfinishedJobViews } from '../migration-jobs/index.ts';
import * as repo from './stats.repository.ts';
import {
  HOURS_SHOWN, MAX_ATTEMPTS_SHOWN, MAX_ERROR_GROUPS, MAX_GROUP_EXAMPLES, type AccountAttempts, type SupplierStats, type SupplierSummaryList,
} from './stats.schemas.ts';
import { utcSeconds } from '../../schemas/datetime.ts';

// GET stats/<supplier>/ (D14). Read without a transaction: the figures are a dashboard's, each query
// consistent in itself; a count moving between two of them is the next refresh's business. The
// queries are independent, so they are sent together: on PostgreSQL each takes a connection of the
// pool and the answer waits for the slowest, not for their sum (with a job running on 2 cores, each
// round trip waits its turn for a core); PGlite's one session runs them one after another as before.

export async function supplierStats(db: Kysely<Database>, caller: Caller, code: string): Promise<SupplierStats> {
  const supplier = await requireSupplier(db, caller, code);
  const [counts, inProgress, rejected, hours, groups, jobs] = await Promise.all([
    repo.stateCounts(db, supplier.id),
    repo.createsInProgress(db, supplier.id),
    repo.rejectedJobRecords(db, supplier.id),
    repo.createdPerHour(db, supplier.id, HOURS_SHOWN),
    repo.errorGroups(db, supplier.id, MAX_ERROR_GROUPS, MAX_GROUP_EXAMPLES),
    unfinishedJobViews(db, supplier.id),
  ]);
  return {
    import_supplier: supplier.code,
    status: supplier.status,
    counts: { staged: counts.staged, in_progress: inProgress, imported: counts.imported, failed: counts.failed, skipped: counts.skipped, rejected },
    created_per_hour: hours.map(({ h, n }) => ({ hour: hourLabel(h), count: n })),
    errors_by_code: groups.map((g) => ({ code: g.code, attr: g.attr === '' ? null : g.attr, count: g.n, examples: g.examples })),
    jobs,
  };
}

const hourLabel = (hoursSinceEpoch: number): string => `${new Date(hoursSinceEpoch * 3_600_000).toISOString().slice(0, 13)}:00:00Z`;

/** The caller's own suppliers: what the dashboard offers to pick from. */
export async function callerSuppliers(db: Kysely<Database>, caller: Caller): Promise<SupplierSummaryList> {
  return repo.organisationSuppliers(db, caller.organisationId);
}

/** Another organisation's supplier and an unknown one answer alike (D3). */
async function requireSupplier(db: Kysely<Database>, caller: Caller, code: string) {
  const supplier = await caller.findSupplier(code);
  if (!supplier) throw new AppError('not_found', `No import supplier with code "${code}".`);
  return supplier;
}

/** The create attempts of one account, for the dashboard's account view (status comes from its own endpoint). */
export async function accountAttempts(db: Kysely<Database>, caller: Caller, code: string, ext: string): Promise<AccountAttempts> {
  const supplier = await requireSupplier(db, caller, code);
  const rows = await repo.accountAttempts(db, supplier.id, ext, MAX_ATTEMPTS_SHOWN);
  if (!rows) throw new AppError('account_not_found', `No import process for account "${ext}" of import supplier "${code}".`);
  return {
    import_supplier: supplier.code,
    external_account_number: ext,
    attempts: rows.map((row) => ({
      started_at: utcSeconds(row.started_at),
      finished_at: utcSeconds(row.finished_at),
      dry_run: row.dry_run,
      outcome: row.outcome,
      error: row.outcome === 'failed' || row.error_code !== null
        ? { code: row.error_code ?? 'internal_error', attr: row.error_attr || null, detail: row.error_detail ?? '' } : null,
    })),
  };
}
