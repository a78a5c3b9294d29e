import type { Kysely } from 'kysely';
import { Gauge, type Registry } from 'prom-client';
import type { Database } from '../db/schema.ts';
import { vendorLatency } from '../core/process-metrics.ts';
import * as figures from '../modules/stats/index.ts';

// Domain metrics on /metrics (D14). The figures of the migration are gauges read from the store at
// scrape time (collect), so every instance reports the same truth however many run and whichever
// restarted; per-process figures (vendor latency) are histograms kept in core/process-metrics.ts.
// The figures come from the stats module (stats-metrics.service.ts), which reads them with the
// stats endpoint's own counters: a few indexed queries a scrape, for every supplier at once.
// Served only to the scrape credential (METRICS_TOKEN, http/metrics.ts): the labels name tenants' suppliers.

type Db = Kysely<Database>;

export function registerDomainMetrics(registry: Registry, db: Db): void {
  registry.registerMetric(vendorLatency);
  const gauge = (name: string, help: string, labelNames: string[], read: (db: Db) => Promise<figures.Figure[]>): void => {
    // Read afresh at each scrape; a store that fails leaves the gauge empty, never fails /metrics.
    new Gauge({
      name, help, labelNames, registers: [registry],
      async collect() {
        this.reset();
        for (const [labels, value] of await read(db).catch((): figures.Figure[] => [])) this.set(labels, value);
      },
    });
  };

  gauge('import_accounts', 'Accounts of each supplier by state: staged (not imported, not skipped), imported, skipped, failed (latest create attempt failed)',
    ['supplier', 'state'], figures.accountsByState);
  gauge('import_accounts_failed_by_code', 'Failing staged accounts (latest create attempt failed) by the code of their first error, as the stats error groups',
    ['code'], figures.failingByCode);
  gauge('import_creates_in_progress', 'Creates running now, in any instance (account advisory locks held)', [], figures.createsInProgress);
  gauge('import_concurrency_slots_in_use', 'Concurrency slots (PROCESS_CONCURRENCY_LIMIT) held now, in any instance', [], figures.slotsInUse);
  gauge('migration_job_records', 'Records of the migration jobs not finished (not completed or cancelled), by outcome',
    ['outcome'], figures.unfinishedJobRecords);
  gauge('webhook_deliveries_last_hour', 'Webhook delivery attempts of the last hour by result: delivered (2xx), rejected (other status), failed (no answer)',
    ['result'], figures.deliveriesLastHour);
}
