import { sql, type Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import type { Database } from '../db/schema.ts';
import { vendorLatency } from '../core/process-metrics.ts';
import { ACCOUNT_LOCK_SPACE, SLOT_LOCK_SPACE } from '../modules/account-imports/import-locks.repository.ts';
import { SQL_FINISHED_JOB_STATES } from '../modules/migration-jobs/job-states.ts';

// Domain metrics on /metrics (D14). The figures of the migration are gauges read from the store at
// scrape time (collect), so every instance reports the same truth however many run and whichever
// restarted; per-process figures (vendor latency) are histograms kept in core/process-metrics.ts.
// Each scrape costs a few indexed queries (those of the stats endpoint, for every supplier at once).
// Served only to the scrape credential (METRICS_TOKEN, http/metrics.ts): the labels name tenants' suppliers.

type Db = Kysely<Database>;

export function registerDomainMetrics(registry: Registry, db: Db): void {
  registry.registerMetric(vendorLatency);

  gauge(registry, 'import_accounts', 'Accounts of each supplier by state: staged (not imported, not skipped), imported, skipped, failed (latest create attempt failed)',
    ['supplier', 'state'], async (set) => {
      // The stats counters (migration 009): a few rows a supplier, not a count of its accounts.
      const { rows } = await sql<{ code: string; staged: number; imported: number; skipped: number; failed: number }>`
        SELECT s.code,
          coalesce(sum(c.staged), 0)::int AS staged, coalesce(sum(c.imported), 0)::int AS imported,
          coalesce(sum(c.skipped), 0)::int AS skipped, coalesce(sum(c.failed), 0)::int AS failed
        FROM import_suppliers s LEFT JOIN account_import_counts c ON c.supplier_id = s.id GROUP BY s.code`.execute(db);
      for (const row of rows) {
        for (const state of ['staged', 'imported', 'skipped', 'failed'] as const) set({ supplier: row.code, state }, row[state]);
      }
    });

  gauge(registry, 'import_accounts_failed_by_code', 'Failing staged accounts (latest create attempt failed) by the code of their first error, as the stats error groups',
    ['code'], async (set) => {
      const { rows } = await sql<{ code: string; n: number }>`SELECT code, sum(failed)::int AS n FROM account_error_group_counts
        GROUP BY code HAVING sum(failed) > 0`.execute(db);
      for (const row of rows) set({ code: row.code }, row.n);
    });

  gauge(registry, 'import_creates_in_progress', 'Creates running now, in any instance (account advisory locks held)', [], async (set) => {
    set({}, await advisoryLocks(db, ACCOUNT_LOCK_SPACE, 1));
  });

  gauge(registry, 'import_concurrency_slots_in_use', 'Concurrency slots (PROCESS_CONCURRENCY_LIMIT) held now, in any instance', [], async (set) => {
    set({}, await advisoryLocks(db, SLOT_LOCK_SPACE, 2));
  });

  gauge(registry, 'migration_job_records', 'Records of the migration jobs not finished (not completed or cancelled), by outcome',
    ['outcome'], async (set) => {
      const { rows } = await sql<{ outcome: string; n: number }>`SELECT r.outcome, count(*)::int AS n
        FROM migration_jobs j JOIN migration_job_records r ON r.job_id = j.id
        WHERE j.state NOT IN (${SQL_FINISHED_JOB_STATES}) GROUP BY r.outcome`.execute(db);
      for (const outcome of ['pending', 'running', 'succeeded', 'skipped', 'failed', 'cancelled']) {
        set({ outcome }, rows.find((row) => row.outcome === outcome)?.n ?? 0);
      }
    });

  gauge(registry, 'webhook_deliveries_last_hour', 'Webhook delivery attempts of the last hour by result: delivered (2xx), rejected (other status), failed (no answer)',
    ['result'], async (set) => {
      const { rows } = await sql<{ result: string; n: number }>`SELECT CASE WHEN status_code BETWEEN 200 AND 299 THEN 'delivered'
          WHEN status_code IS NOT NULL THEN 'rejected' ELSE 'failed' END AS result, count(*)::int AS n
        FROM webhook_deliveries WHERE at > now() - interval '1 hour' GROUP BY 1`.execute(db);
      for (const result of ['delivered', 'rejected', 'failed']) set({ result }, rows.find((row) => row.result === result)?.n ?? 0);
    });
}

async function advisoryLocks(db: Db, space: number, objsubid: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = ${objsubid} AND classid = ${space}::int8::oid
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(db);
  return rows[0]?.n ?? 0;
}

type Setter = (labels: Record<string, string>, value: number) => void;

/** A gauge whose values are read afresh at each scrape; a store that fails leaves it empty, never fails /metrics. */
function gauge(registry: Registry, name: string, help: string, labelNames: string[], read: (set: Setter) => Promise<void>): void {
  new Gauge({
    name, help, labelNames, registers: [registry],
    async collect() {
      this.reset();
      await read((labels, value) => this.set(labels, value)).catch(() => undefined);
    },
  });
}
