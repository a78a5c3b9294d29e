import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { preparedStatementTexts, SERVER_PREPARED } from '../../src/db/server-prepared.ts';
import { onPostgres, pgSession, supplierIdOf, waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique } from '../support/test-app.ts';

// A statement marked SERVER_PREPARED keeps, after its first five runs, a generic plan: made without
// its values, and kept while the tables grow until an ANALYZE replaces it (db/server-prepared.ts).
// So every statement a migration job prepares is planned here as PostgreSQL would keep it (forced
// generic) and each table must be read through the index of the key it is looked up by, never a
// scan of the table nor another index that a tie could pick: on the fresh database the job leaves
// (never analysed, where such ties happen) and again after its tables have grown and been analysed.
const SKIP = !onPostgres && 'prepared statements and their plans belong to PostgreSQL (set DATABASE_URL)';
const t = await buildTestApp({ WORKER_CONCURRENCY: '2' });
const db = t.store.db;
const JOBS = '/v1/data-import/migration-jobs/';

/** The indexes each table may be read through by a prepared statement. */
const ALLOWED: Record<string, string[]> = {
  accounts: ['accounts_pkey', 'accounts_supplier_id_external_account_number_key'],
  account_imports: ['account_imports_pkey', 'account_imports_supplier_id_external_account_number_key'],
  operations_teams: ['operations_teams_name_key', 'operations_teams_pkey'],
  import_suppliers: ['import_suppliers_pkey'],
  migration_jobs: ['migration_jobs_pkey'],
  migration_job_records: ['migration_job_records_pkey', 'migration_job_records_outcome_idx'],
  transactions: ['transactions_account_id_transaction_id_key'],
  statements: ['statements_account_id_statement_id_key', 'statements_account_period_idx'],
  notes: ['notes_account_body_idx'],
};

/**
 * Every table scan in `plan` that is not through an allowed index, as "how table". A table of one
 * page (`small`) may be read whole: that is the cheapest plan while it is that small, and autovacuum
 * analyses it again (replacing the plan) long before it has grown much.
 */
function offending(plan: string, small: ReadonlySet<string>): string[] {
  const found: string[] = [];
  for (const match of plan.matchAll(/(Seq Scan|Index Scan|Index Only Scan|Bitmap Index Scan|Bitmap Heap Scan)(?: Backward)?(?: using (\S+))? on (\S+)/g)) {
    const [, how, index, table] = match as unknown as [string, string, string | undefined, string];
    if (how === 'Bitmap Heap Scan') continue; // its Bitmap Index Scan names the index
    const allowed = ALLOWED[table];
    if (how === 'Bitmap Index Scan') {
      // "Bitmap Index Scan on <index>": the index's table is the one its name begins with.
      const owner = Object.keys(ALLOWED).find((name) => table.startsWith(`${name}_`));
      if (!owner || !ALLOWED[owner]!.includes(table)) found.push(`${how} on ${table}`);
      continue;
    }
    if (how === 'Seq Scan' && small.has(table)) continue;
    if (!allowed || how === 'Seq Scan' || !index || !allowed.includes(index)) found.push(`${how}${index ? ` using ${index}` : ''} on ${table}`);
  }
  return found;
}

/** The generic plan of each prepared text, on a session of its own. */
async function genericPlans(texts: readonly string[]): Promise<Array<{ text: string; plan: string }>> {
  const session = await pgSession(t.config.databaseUrl);
  try {
    await session.query('SET plan_cache_mode = force_generic_plan');
    const plans = [];
    for (const [i, text] of texts.entries()) {
      const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      await session.query(`PREPARE plan_check_${i} AS ${text}`);
      const { rows } = await session.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN EXECUTE plan_check_${i}${params ? `(${Array.from({ length: params }, () => 'NULL').join(', ')})` : ''}`);
      plans.push({ text, plan: rows.map((row) => row['QUERY PLAN']).join('\n') });
    }
    return plans;
  } finally {
    await session.end();
  }
}

async function assertPlans(plans: Array<{ text: string; plan: string }>, analysed: boolean): Promise<void> {
  // Never analysed, every table counts as empty: no table is small enough to be read whole then.
  const small = new Set(analysed ? (await sql<{ relname: string }>`SELECT relname FROM pg_class
    WHERE relname = ANY(${Object.keys(ALLOWED)}::text[]) AND relkind = 'r' AND relpages <= 1`.execute(db)).rows.map((r) => r.relname) : []);
  const bad = plans.map(({ text, plan }) => ({ text: text.slice(0, 160), scans: offending(plan, small), plan })).filter((p) => p.scans.length > 0);
  assert.deepEqual(bad, [], 'a prepared statement\'s generic plan reads a table other than by its key');
}

describe('the generic plans of the statements a migration job prepares', { skip: SKIP }, () => {
  let texts: readonly string[] = [];

  test('a job with every kind of step prepares its statements', async () => {
    const tenant = await createTenant(t);
    // Six records, so that the steps run past the five custom plans before a generic one is kept.
    const lines = Array.from({ length: 6 }, (_, n) => JSON.stringify({
      account: accountPayload(tenant.supplier, { external_account_number: unique(`PLAN${n}`) }),
      statements: [{ statement_id: `S${n}`, bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', issued_date: '2024-02-01', number: `No-${n}`, gross_amount: 10 }],
      transactions: [{ transaction_id: `T${n}`, transaction_date: '2024-03-01', amount: 12.3, type: 'CHARGE', reason: 'IMPORTED_CHARGE' }],
      notes: [{ body: `Note ${n}`, created_at: '2024-03-02T10:00:00Z' }],
    }));
    // The first run writes its new accounts in sets (chunks of three); the same file run again finds
    // them imported, so each record goes through the steps' services one at a time.
    for (const run of ['in sets', 'one at a time']) {
      const job = await call(t.app, 'POST', JOBS, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
      assert.equal(job.status, 201, job.body);
      const id = (job.json as { id: string }).id;
      const sent = await t.app.inject({
        method: 'POST', url: `${JOBS}${id}/records/`, payload: lines.join('\n'),
        headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
      });
      assert.equal(sent.statusCode, 200, sent.body);
      assert.equal((await call(t.app, 'POST', `${JOBS}${id}/start/`, { token: tenant.token })).status, 200);
      await waitUntil(async () => (await call(t.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json.state === 'completed', `the job (${run}) completes`, 60_000);
      const view = (await call(t.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json as { counts: { succeeded: number } };
      assert.equal(view.counts.succeeded, 6, JSON.stringify(view));
    }

    texts = preparedStatementTexts().filter((text) => text.startsWith(SERVER_PREPARED));
    // The record's claim and outcome, the create's read, the account tree, the history's reads and
    // writes with their events, and the staging batch.
    for (const part of ['migration_job_records r SET outcome', 'UPDATE migration_job_records SET outcome', 'customer_rows',
      'FROM statements WHERE account_id', 'transaction_balance_delta', 'md5(coalesce(body', '"statement_id"', 'jsonb_to_recordset']) {
      assert.ok(texts.some((text) => text.includes(part)), `a prepared statement with "${part}" among ${texts.length}`);
    }
  });

  test('on the fresh database, each reads its tables by their keys', async () => {
    assert.ok(texts.length > 0);
    await assertPlans(await genericPlans(texts), false);
  });

  test('after the tables have grown and been analysed, still by their keys', async () => {
    assert.ok(texts.length > 0);
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const job = await call(t.app, 'POST', JOBS, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const jobId = (job.json as { id: string }).id;
    // Many staged and created accounts of one supplier, a big job's records (half of them
    // finished), and a long history on one account.
    const [team] = (await sql<{ id: number }>`SELECT id FROM operations_teams ORDER BY id LIMIT 1`.execute(db)).rows;
    await sql`WITH staged AS (
        INSERT INTO account_imports (supplier_id, external_account_number, data)
        SELECT ${supplierId}::int8, 'FILL' || g, '{}'::jsonb FROM generate_series(1, 20000) AS g RETURNING id, external_account_number)
      INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number, operations_team_id,
        billing_street_address, billing_country, billing_postal_code)
      SELECT 'F-' || s.id, s.id, ${supplierId}::int8, s.external_account_number, ${team!.id}::int8, '1 Street', 'GB', 'AB1 2CD'
      FROM staged s`.execute(db);
    await sql`UPDATE account_imports ai SET account_id = a.id FROM accounts a WHERE a.account_import_id = ai.id AND ai.account_id IS NULL`.execute(db);
    // A big job's records, half of them finished, and a long history on one account.
    await sql`INSERT INTO migration_job_records (job_id, line, external_account_number, record, outcome, finished_at)
      SELECT ${jobId}::uuid, g, 'FILL' || g, '{}'::jsonb, CASE WHEN g % 2 = 0 THEN 'succeeded' ELSE 'pending' END,
        CASE WHEN g % 2 = 0 THEN now() END
      FROM generate_series(1, 30000) AS g`.execute(db);
    const [account] = (await sql<{ id: number }>`SELECT id FROM accounts ORDER BY id LIMIT 1`.execute(db)).rows;
    assert.ok(account && supplierId > 0);
    await sql`INSERT INTO transactions (account_id, transaction_id, transaction_date, amount, type)
      SELECT ${account.id}::int8, 'FILL' || g, '2024-01-01', 1, 'CHARGE' FROM generate_series(1, 20000) AS g`.execute(db);
    await sql`INSERT INTO notes (account_id, body, document_paths, created_at)
      SELECT ${account.id}::int8, 'Fill ' || g, '[]', now() FROM generate_series(1, 5000) AS g`.execute(db);
    await sql`ANALYZE`.execute(db);
    await assertPlans(await genericPlans(texts), true);
  });
});
