import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT, startServer } from '../lib/proc.ts';
import { dropDatabases, freshTarget, provision, serviceEnv } from '../lib/setup.ts';
import { medianGetMs } from '../lib/timed-get.ts';

// Reading a migration job that is still running: a job of RECORDS records (one in a hundred failing)
// written straight into a fresh PostgreSQL database, FINISHED of them finished over the last 20
// minutes by updates in chunks of 10,000 and not vacuumed since, as while a job runs. Times GET of the
// job, of the supplier's job list and of the supplier's statistics (each reads the job's view),
// READS times each, and prints the medians. The service is this checkout's, or the one under
// SERVICE_ROOT (another checkout of the project, sharing node_modules): run both on the same data to
// compare two versions (the database is migrated by this checkout; an older service ignores what it
// does not know).
//
// Usage: RECORDS=1000000 FINISHED=600000 READS=9 [SERVICE_ROOT=/path/to/other/checkout] node --import tsx bench/experiments/running-job-reads.ts

const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const records = Number(process.env.RECORDS ?? 1_000_000);
const finished = Number(process.env.FINISHED ?? Math.round(records * 0.6));
const reads = Number(process.env.READS ?? 9);
const serviceRoot = process.env.SERVICE_ROOT ?? ROOT;
const logDir = join(ROOT, '.bench-data', 'running-job-reads');
mkdirSync(logDir, { recursive: true });

const name = `running_job_reads_${process.pid}`;
const target = await freshTarget('postgres', adminUrl, name);
const tenant = await provision(target);
const sql = new pg.Client({ connectionString: target.env.DATABASE_URL });
await sql.connect();

const { rows: [job] } = await sql.query<{ id: string }>(`INSERT INTO migration_jobs (id, supplier_id, operations_team_id, state, total_lines, created_at, started_at)
  VALUES (gen_random_uuid(), $1, $2, 'running', $3, now() - interval '20 minutes', now() - interval '20 minutes') RETURNING id::text`,
[tenant.supplierId, tenant.teamId, records]);
await sql.query(`INSERT INTO migration_job_records (job_id, line, external_account_number, outcome, enqueued)
  SELECT $1::uuid, l, 'EXT-' || l, 'pending', true FROM generate_series(1, $2) l`, [job!.id, records]);
await sql.query('VACUUM ANALYZE migration_job_records');
for (let from = 1; from <= finished; from += 10_000) {
  await sql.query(`UPDATE migration_job_records SET outcome = CASE WHEN line % 100 = 0 THEN 'failed' ELSE 'succeeded' END,
      errors = CASE WHEN line % 100 = 0 THEN '[{"code": "invalid_phone_number", "attr": "account.customers.0.mobile", "detail": "x"}]'::jsonb ELSE '[]' END,
      finished_at = now() - make_interval(secs => 1200 - 1200.0 * line / $3)
    WHERE job_id = $1::uuid AND line BETWEEN $2 AND least($2 + 9999, $3)`, [job!.id, from, finished]);
}

const server = await startServer({ name: 'running-job-reads', script: join(serviceRoot, 'src/main.ts'), env: serviceEnv(target, 'warn'), logDir });
const headers = { authorization: `Token ${tenant.token}` };
const v1 = `${server.url}/v1/data-import`;

const timed = (url: string) => medianGetMs(url, headers, reads);

try {
  const view = await (await fetch(`${v1}/migration-jobs/${job!.id}/`, { headers })).json() as { counts: unknown; records_per_minute: number };
  const figures = {
    job: await timed(`${v1}/migration-jobs/${job!.id}/`),
    list: await timed(`${v1}/migration-jobs/?import_supplier=${tenant.supplier}`),
    stats: await timed(`${v1}/stats/${tenant.supplier}/`),
  };
  console.log(`service: ${serviceRoot}`);
  console.log(`a running job of ${records} records, ${finished} finished: ${JSON.stringify(view.counts)}, ${view.records_per_minute} records/min`);
  console.log(`GET job ${figures.job.toFixed(1)} ms, GET list ${figures.list.toFixed(1)} ms, GET stats ${figures.stats.toFixed(1)} ms (medians of ${reads})`);
} finally {
  await sql.end();
  await server.stop();
  await dropDatabases(adminUrl, [name]);
}
