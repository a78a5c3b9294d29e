import { sql } from 'kysely';
import { jobTable } from './job-table.ts';

// An experiment, not the product: a migration job's own statements, run as its dispatcher and
// workers run them (send 800, claim chunks of 50, succeed them, look for the end), on a table never
// analysed (PGlite has no autovacuum), with each statement's time printed every 5,000 records: a
// statement whose time grows as the job goes on is what slows a big job down.
// node --import tsx bench/experiments/job-statements-over-time.ts  (N records, default 50,000)
const { store, db, job } = await jobTable(Number(process.env.N ?? 50_000));

const spent: Record<string, number> = {};
async function timed<T>(name: string, run: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try { return await run(); } finally { spent[name] = (spent[name] ?? 0) + performance.now() - t0; }
}
const takeUnsent = (limit: number) => timed('takeUnsent', async () => (await sql<{ line: number }>`WITH picked AS MATERIALIZED (
    SELECT line FROM migration_job_records WHERE job_id = ${job}::uuid AND outcome = 'pending' AND NOT enqueued
    ORDER BY line LIMIT ${limit} FOR UPDATE SKIP LOCKED
  )
  UPDATE migration_job_records SET enqueued = true
  WHERE job_id = ${job}::uuid AND line IN (SELECT line FROM picked)
  RETURNING line`.execute(db)).rows.map((r) => r.line).sort((a, b) => a - b));
const queue: number[] = await takeUnsent(800);
let done = 0;
while (queue.length > 0) {
  const lines = queue.splice(0, 50);
  await timed('claim', () => sql`UPDATE migration_job_records r SET outcome = 'running', attempts = r.attempts + 1
    WHERE r.job_id = ${job}::uuid AND r.line = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(lines)}::jsonb)::int))
      AND r.outcome IN ('pending', 'running')`.execute(db));
  await timed('finishSucceeded', () => sql`UPDATE migration_job_records r SET outcome = 'succeeded', finished_at = now()
    FROM jsonb_to_recordset(${JSON.stringify(lines.map((l) => ({ l })))}::jsonb) AS x(l int)
    WHERE r.job_id = ${job}::uuid AND r.line = x.l AND r.outcome = 'running'`.execute(db));
  await timed('hasUnfinished', () => sql`(SELECT 'pending' AS outcome FROM migration_job_records WHERE job_id = ${job}::uuid AND outcome = 'pending' ORDER BY line LIMIT 1)
    UNION ALL (SELECT 'running' FROM migration_job_records WHERE job_id = ${job}::uuid AND outcome = 'running' ORDER BY line LIMIT 1)`.execute(db));
  await timed('countInFlight', () => sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM migration_job_records
    WHERE job_id = ${job}::uuid AND enqueued AND outcome IN ('pending', 'running') LIMIT 800) AS r`.execute(db));
  queue.push(...await takeUnsent(50));
  done += lines.length;
  if (done % 5000 === 0) {
    console.log(`${done} records: ${Object.entries(spent).map(([k, v]) => `${k} ${(v / 100).toFixed(2)} ms`).join(', ')} (per chunk)`);
    for (const k of Object.keys(spent)) spent[k] = 0;
  }
}
await store.close();
