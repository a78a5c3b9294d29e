import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { openStore, type Store } from '../../src/db/store.ts';
import { migrate } from '../../src/db/migrate.ts';

/**
 * For the experiments on a job's statements: a store (PGlite in memory, or DATABASE_URL: use an empty
 * database of its own, the rows are left there), migrated, never analysed, holding one running job of
 * `records` pending records (line g, account "E<g>").
 */
export async function jobTable(records: number): Promise<{ store: Store; db: Kysely<Database>; job: string }> {
  const store = await openStore({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' });
  await migrate(store);
  const { db } = store;
  await sql`INSERT INTO organisations (name) VALUES ('o')`.execute(db);
  await sql`INSERT INTO import_suppliers (code, organisation_id) VALUES ('S', (SELECT id FROM organisations LIMIT 1))`.execute(db);
  await sql`INSERT INTO operations_teams (name) VALUES ('t')`.execute(db);
  const job = '00000000-0000-4000-8000-000000000001';
  await sql`INSERT INTO migration_jobs (id, supplier_id, operations_team_id, state)
    VALUES (${job}::uuid, (SELECT id FROM import_suppliers LIMIT 1), (SELECT id FROM operations_teams LIMIT 1), 'running')`.execute(db);
  await sql`INSERT INTO migration_job_records (job_id, line, external_account_number, record)
    SELECT ${job}::uuid, g, 'E' || g, '{"a":1}'::jsonb FROM generate_series(1, ${records}) g`.execute(db);
  return { store, db, job };
}
