import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { ROOT, startServer } from '../lib/proc.ts';
import { dropDatabases, freshTarget, provision, serviceEnv } from '../lib/setup.ts';
import { medianGetMs } from '../lib/timed-get.ts';

// Reading ended migration jobs: a supplier's jobs, JOBS of them with RECORDS records each (one in a
// hundred failed with an error) and one of BIG_RECORDS, written straight into a fresh PostgreSQL
// database as jobs whose records have all finished, then ended by the service itself (POST
// …/cancel/ on each: the transaction that ends a job keeps its figures). Times GET of the big job
// and GET of the supplier's list, READS times each, with the figures kept: just ended, and as an
// hour later (the jobs' end moved back); then the same with the figures cleared, which is how a job
// that ended before they were kept is read (its view reads its record counters and counts its
// failures by code), in the same run. Prints the medians and the ratio. Before the record counters
// (migration 026) a view without kept figures counted every record: the figures of 2026-11-28 in
// bench/findings.md were measured then.
//
// Usage: JOBS=30 RECORDS=20000 BIG_RECORDS=1000000 READS=9 node --import tsx bench/experiments/ended-job-reads.ts

const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const jobs = Number(process.env.JOBS ?? 30);
const records = Number(process.env.RECORDS ?? 20_000);
const bigRecords = Number(process.env.BIG_RECORDS ?? 1_000_000);
const reads = Number(process.env.READS ?? 9);
const logDir = join(ROOT, '.bench-data', 'ended-job-reads');
mkdirSync(logDir, { recursive: true });

const name = `ended_job_reads_${process.pid}`;
const target = await freshTarget('postgres', adminUrl, name);
const tenant = await provision(target);
const sql = new pg.Client({ connectionString: target.env.DATABASE_URL });
await sql.connect();
const server = await startServer({ name: 'ended-job-reads', script: join(ROOT, 'src/main.ts'), env: serviceEnv(target, 'warn'), logDir });
const headers = { authorization: `Token ${tenant.token}` };
const api = `${server.url}/v1/data-import/migration-jobs/`;

/** A job whose `n` records have all finished (every hundredth failed), still running: the service ends it. */
async function seedJob(n: number, hoursAgo: number): Promise<string> {
  const { rows: [job] } = await sql.query<{ id: string }>(`INSERT INTO migration_jobs
      (id, supplier_id, operations_team_id, state, total_lines, created_at, started_at)
    VALUES (gen_random_uuid(), $1, $2, 'running', $3, now() - make_interval(hours => $4), now() - make_interval(hours => $4))
    RETURNING id::text`, [tenant.supplierId, tenant.teamId, n, hoursAgo]);
  await sql.query(`INSERT INTO migration_job_records (job_id, line, external_account_number, outcome, step, errors, finished_at, enqueued)
    SELECT $1::uuid, l, 'EXT-' || l, CASE WHEN l % 100 = 0 THEN 'failed' ELSE 'succeeded' END, CASE WHEN l % 100 = 0 THEN 'account' END,
      CASE WHEN l % 100 = 0 THEN '[{"code": "invalid_phone_number", "attr": "account.customers.0.mobile", "detail": "x"}]'::jsonb ELSE '[]' END,
      now() - make_interval(hours => $2), true
    FROM generate_series(1, $3) l`, [job!.id, hoursAgo, n]);
  return job!.id;
}

const timed = (url: string) => medianGetMs(url, headers, reads);

try {
  const big = await seedJob(bigRecords, jobs + 10);
  for (let i = 0; i < jobs; i += 1) await seedJob(records, i + 1);
  await sql.query('VACUUM ANALYZE migration_job_records');
  const { rows: ids } = await sql.query<{ id: string }>(`SELECT id::text FROM migration_jobs WHERE state = 'running'`);
  for (const { id } of ids) {
    const res = await fetch(`${api}${id}/cancel/`, { method: 'POST', headers });
    if (res.status !== 200) throw new Error(`cancel answered ${res.status}: ${await res.text()}`);
  }
  const list = `${api}?import_supplier=${tenant.supplier}`;
  // Just ended, a job's view still looks for records finished in the rate's window; an hour later it does not.
  const justEnded = { job: await timed(`${api}${big}/`), list: await timed(list) };
  await sql.query(`UPDATE migration_jobs SET finished_at = finished_at - interval '1 hour'`);
  const kept = { job: await timed(`${api}${big}/`), list: await timed(list) };
  await sql.query('UPDATE migration_jobs SET final_figures = NULL');
  const counted = { job: await timed(`${api}${big}/`), list: await timed(list) };
  const total = bigRecords + jobs * records;
  const pct = (a: number, b: number) => `${(a / b * 100).toFixed(1)}%`;
  console.log(`GET of a job of ${bigRecords} records: ${kept.job.toFixed(1)} ms with its figures kept (${justEnded.job.toFixed(1)} just ended), `
    + `${counted.job.toFixed(1)} ms counted (${pct(kept.job, counted.job)})`);
  console.log(`GET of the list of ${jobs + 1} jobs (${total} records): ${kept.list.toFixed(1)} ms with their figures kept (${justEnded.list.toFixed(1)} just ended), `
    + `${counted.list.toFixed(1)} ms counted (${pct(kept.list, counted.list)})`);
} finally {
  await sql.end();
  await server.stop();
  await dropDatabases(adminUrl, [name]);
}
