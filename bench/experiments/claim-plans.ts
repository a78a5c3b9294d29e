import { sql } from 'kysely';
import { jobTable } from './job-table.ts';

// An experiment, not the product: how a migration job's per-chunk statements are planned on a table
// never analysed (PGlite has no autovacuum), with N records (default 100,000), 90% pending. Each
// variant runs under EXPLAIN ANALYZE; `subquery` is the claim as it was (`line IN (subquery)`), read
// through the outcome index, `anyArray` as it is. node --import tsx bench/experiments/claim-plans.ts

const { store, db, job } = await jobTable(Number(process.env.N ?? 100_000));
await sql`UPDATE migration_job_records SET enqueued = true WHERE job_id = ${job}::uuid AND line < 20000`.execute(db);
await sql`UPDATE migration_job_records SET outcome = 'succeeded' WHERE job_id = ${job}::uuid AND line < 10000`.execute(db);
const lines = Array.from({ length: 50 }, (_, i) => 15000 + i);
const variants: Record<string, ReturnType<typeof sql>> = {
  subquery: sql`EXPLAIN ANALYZE UPDATE migration_job_records r SET attempts = r.attempts + 1
    WHERE r.job_id = ${job}::uuid AND r.line IN (SELECT jsonb_array_elements_text(${JSON.stringify(lines)}::jsonb)::int) AND r.outcome IN ('pending', 'running')`,
  anyArray: sql`EXPLAIN ANALYZE UPDATE migration_job_records r SET attempts = r.attempts + 1
    WHERE r.job_id = ${job}::uuid AND r.line = ANY(ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(lines)}::jsonb)::int)) AND r.outcome IN ('pending', 'running')`,
  countInFlight: sql`EXPLAIN ANALYZE SELECT count(*)::int AS n FROM (SELECT 1 FROM migration_job_records
    WHERE job_id = ${job}::uuid AND enqueued AND outcome IN ('pending', 'running') LIMIT 800) AS r`,
  hasUnsent: sql`EXPLAIN ANALYZE SELECT 1 FROM migration_job_records WHERE job_id = ${job}::uuid AND outcome = 'pending' AND NOT enqueued LIMIT 1`,
  othersPending: sql`EXPLAIN ANALYZE SELECT COALESCE((SELECT true FROM migration_job_records WHERE job_id = ${job}::uuid AND outcome = 'pending' ORDER BY line LIMIT 1), false)`,
  finishSucceeded: sql`EXPLAIN ANALYZE UPDATE migration_job_records r SET outcome = 'succeeded', finished_at = now()
    FROM jsonb_to_recordset(${JSON.stringify(lines.map((l) => ({ l, n: 'x' })))}::jsonb) AS x(l int, n text)
    WHERE r.job_id = ${job}::uuid AND r.line = x.l AND r.outcome = 'running'`,
  takeUnsent: sql`EXPLAIN ANALYZE SELECT line FROM migration_job_records WHERE job_id = ${job}::uuid AND outcome = 'pending' AND NOT enqueued
      ORDER BY line LIMIT 100 FOR UPDATE SKIP LOCKED`,
};
await sql`UPDATE migration_job_records SET outcome = 'running' WHERE job_id = ${job}::uuid AND line BETWEEN 15000 AND 15400`.execute(db);
for (const [name, q] of Object.entries(variants)) {
  const t0 = performance.now();
  const { rows } = await q.execute(db);
  console.log(`== ${name} ${(performance.now() - t0).toFixed(1)} ms`);
  for (const r of rows as Array<Record<string, string>>) console.log(Object.values(r)[0]);
}
await store.close();
