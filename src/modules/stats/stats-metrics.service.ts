import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { RECORD_OUTCOMES } from '../migration-jobs/index.ts';
import * as repo from './stats.repository.ts';

// The figures of /metrics (http/domain-metrics.ts makes each a gauge read at scrape time): the stats
// endpoint's own counters and lock reading, for every supplier at once. Each figure is its labels
// and its value; a label value that has no row reads 0, so a series never vanishes between scrapes.
type Db = Kysely<Database>;
export type Figure = [labels: Record<string, string>, value: number];

/** Accounts of each supplier by state (the counters of migration 009, a few rows a supplier). */
export async function accountsByState(db: Db): Promise<Figure[]> {
  const rows = await repo.stateCountsBySupplier(db);
  return rows.flatMap((row) => repo.COUNTED_STATES.map((state): Figure => [{ supplier: row.code, state }, row[state]]));
}

/** Failing staged accounts by the code of their latest attempt's first error. */
export async function failingByCode(db: Db): Promise<Figure[]> {
  return (await repo.failingByCode(db)).map((row): Figure => [{ code: row.code }, row.n]);
}

/** Creates running now, in any instance. */
export async function createsInProgress(db: Db): Promise<Figure[]> {
  return [[{}, await repo.locksHeld(db, 'account')]];
}

/** Concurrency slots held now, in any instance. */
export async function slotsInUse(db: Db): Promise<Figure[]> {
  return [[{}, await repo.locksHeld(db, 'slot')]];
}

/** Records of the jobs not finished, by outcome. */
export async function unfinishedJobRecords(db: Db): Promise<Figure[]> {
  const rows = await repo.unfinishedJobRecords(db);
  return RECORD_OUTCOMES.map((outcome): Figure => [{ outcome }, rows.find((row) => row.outcome === outcome)?.n ?? 0]);
}

/** Webhook delivery attempts of the last hour by result. */
export async function deliveriesLastHour(db: Db): Promise<Figure[]> {
  const rows = await repo.deliveriesLastHour(db);
  return repo.DELIVERY_RESULTS.map((result): Figure => [{ result }, rows.find((row) => row.result === result)?.n ?? 0]);
}
