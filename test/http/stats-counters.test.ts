import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { skipAccount } from '../../src/modules/admin/index.ts';
import { PG_ONLY, pgSession, processAccount, stage, STAGE_URL, supplierIdOf, waitUntil } from '../support/imports.ts';
import { countedRecords, JOBS } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// The counters behind GET stats/<supplier>/ (D14 at a million accounts): the counts by state, the
// accounts created per hour and the error groups are kept by triggers in the writing transactions
// (migration 009). After every kind of change they must agree with a full count of the rows. On
// PGlite and on PostgreSQL. So must a migration job's counts by outcome (migration 026), which every
// job a test runs to its end also checks (test/support/jobs.ts).

const t = await buildTestApp();
const db = t.store.db;

type Counts = { staged: number; imported: number; failed: number; skipped: number };

/**
 * The counts of the stats endpoint, checked against a full count of the supplier's rows, and its
 * hourly counters against a count of its accounts by hour.
 */
async function countsOf(tenant: Tenant): Promise<Counts> {
  const supplierId = await supplierIdOf(t, tenant.supplier);
  const res = await call(t.app, 'GET', `/v1/data-import/stats/${tenant.supplier}/`, { token: tenant.token });
  assert.equal(res.status, 200, res.body);
  const { rows: [full] } = await sql<Counts>`SELECT
      count(*) FILTER (WHERE account_id IS NULL AND NOT skipped)::int AS staged,
      count(*) FILTER (WHERE account_id IS NOT NULL)::int AS imported,
      count(*) FILTER (WHERE account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed')::int AS failed,
      count(*) FILTER (WHERE account_id IS NULL AND skipped)::int AS skipped
    FROM account_imports WHERE supplier_id = ${supplierId}`.execute(db);
  // No migration job here, so no job record rejected before staging (stats.test.ts counts those).
  assert.deepEqual(res.json.counts, { ...full, in_progress: 0, rejected: 0 }, 'the counters agree with a full count');
  const { rows: fullHours } = await sql`SELECT floor(extract(epoch FROM created_at) / 3600)::int AS h, count(*)::int AS n
    FROM accounts WHERE supplier_id = ${supplierId} GROUP BY 1 ORDER BY 1`.execute(db);
  const { rows: keptHours } = await sql`SELECT hour::int AS h, sum(created)::int AS n FROM accounts_created_per_hour
    WHERE supplier_id = ${supplierId} GROUP BY 1 HAVING sum(created) <> 0 ORDER BY 1`.execute(db);
  assert.deepEqual(keptHours, fullHours, 'the hourly counters agree with a count of the accounts');
  const { rows: fullGroups } = await sql`SELECT last_error_group_code AS code, last_error_attr AS attr, count(*)::int AS n FROM account_imports
    WHERE supplier_id = ${supplierId} AND account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed' GROUP BY 1, 2 ORDER BY 1, 2`.execute(db);
  const { rows: keptGroups } = await sql`SELECT code, attr, sum(failed)::int AS n FROM account_error_group_counts
    WHERE supplier_id = ${supplierId} GROUP BY 1, 2 HAVING sum(failed) <> 0 ORDER BY 1, 2`.execute(db);
  assert.deepEqual(keptGroups, fullGroups, 'the error group counters agree with a count of the failing accounts');
  const { in_progress: _, rejected: __, ...counts } = res.json.counts;
  return counts;
}

const groupsOf = async (tenant: Tenant) =>
  (await call(t.app, 'GET', `/v1/data-import/stats/${tenant.supplier}/`, { token: tenant.token })).json.errors_by_code;

const failWith = async (tenant: Tenant, ext: string, extra: { dry_run?: boolean; operations_team_name?: string } = {}) =>
  (await processAccount(t, tenant, ext, extra)).json.code as string;

describe('the stats counters agree with a full count (D14)', () => {
  test('stage, re-stage, dry run, create, failure, skip, unskip: each moves exactly its counts', async () => {
    const tenant = await createTenant(t);
    assert.deepEqual(await countsOf(tenant), { staged: 0, imported: 0, failed: 0, skipped: 0 });
    const a = await stage(t, tenant);
    const b = await stage(t, tenant);
    assert.deepEqual(await countsOf(tenant), { staged: 2, imported: 0, failed: 0, skipped: 0 });
    await stage(t, tenant, a);
    assert.deepEqual(await countsOf(tenant), { staged: 2, imported: 0, failed: 0, skipped: 0 }, 're-stage');
    // A dry run builds the account and rolls it back: no counter moves.
    assert.equal(await failWith(tenant, a.external_account_number, { dry_run: true }), 'dry_run_rolled_back');
    assert.deepEqual(await countsOf(tenant), { staged: 2, imported: 0, failed: 0, skipped: 0 }, 'dry run');
    assert.equal((await processAccount(t, tenant, a.external_account_number)).status, 201);
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 0, skipped: 0 }, 'create');
    const refused = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: a });
    assert.equal(refused.json.code, 'account_already_imported');
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 0, skipped: 0 }, 're-stage of an imported account');

    const noTeam = { operations_team_name: 'no-such-team' };
    assert.equal(await failWith(tenant, b.external_account_number, noTeam), 'operations_team_not_found');
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 1, skipped: 0 }, 'failure');
    assert.deepEqual(await groupsOf(tenant), [{ code: 'operations_team_not_found', attr: 'operations_team_name', count: 1, examples: [b.external_account_number] }]);
    assert.equal(await failWith(tenant, b.external_account_number, noTeam), 'operations_team_not_found');
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 1, skipped: 0 }, 'a second failure');
    await skipAccount(db, tenant.supplier, b.external_account_number);
    assert.deepEqual(await countsOf(tenant), { staged: 0, imported: 1, failed: 0, skipped: 1 }, 'skip');
    // No endpoint lifts a skip mark; an operator's UPDATE is counted all the same.
    await sql`UPDATE account_imports SET skipped = false WHERE external_account_number = ${b.external_account_number}`.execute(db);
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 1, skipped: 0 }, 'unskip');
    // The same account failing another way moves from one error group to another.
    await sql`UPDATE account_imports SET data = jsonb_set(data, '{customers,0,mobile}', '"12"') WHERE external_account_number = ${b.external_account_number}`.execute(db);
    assert.equal(await failWith(tenant, b.external_account_number), 'account_failed_validation');
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 1, skipped: 0 }, 'another failure');
    assert.deepEqual(await groupsOf(tenant), [{ code: 'invalid_phone_number', attr: 'customers.0.mobile', count: 1, examples: [b.external_account_number] }]);
    await stage(t, tenant, b);
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 1, skipped: 0 }, 'a re-stage leaves the latest attempt failed');
    assert.equal(await failWith(tenant, b.external_account_number, { dry_run: true }), 'dry_run_rolled_back');
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 0, skipped: 0 }, 'a passing dry run clears the failure');
    assert.equal((await processAccount(t, tenant, b.external_account_number)).status, 201);
    assert.deepEqual(await countsOf(tenant), { staged: 0, imported: 2, failed: 0, skipped: 0 }, 'create after failing');
    assert.deepEqual(await groupsOf(tenant), []);
  });

  test('rows written straight to the tables are counted too: the triggers, not the services, keep the counters', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const teamId = (await db.selectFrom('operations_teams').select('id').where('name', '=', tenant.team).executeTakeFirstOrThrow()).id;
    for (const ext of ['RAW-1', 'RAW-2', 'RAW-3']) {
      await sql`INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES (${supplierId}, ${ext}, '{}')`.execute(db);
    }
    await sql`INSERT INTO create_attempts (supplier_id, external_account_number, dry_run, outcome, error_code, started_at)
      VALUES (${supplierId}, 'RAW-2', false, 'failed', 'internal_error', now())`.execute(db);
    await db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ id: number }>`INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number,
          operations_team_id, billing_street_address, billing_country, billing_postal_code, created_at)
        SELECT 'A-' || upper(substr(md5(random()::text), 1, 8)), id, supplier_id, external_account_number, ${teamId}, '1 Road', 'GB', 'BS1 5TY',
               now() - interval '5 hours'
        FROM account_imports WHERE supplier_id = ${supplierId} AND external_account_number = 'RAW-3' RETURNING id`.execute(trx);
      await sql`UPDATE account_imports SET account_id = ${rows[0]!.id} WHERE supplier_id = ${supplierId} AND external_account_number = 'RAW-3'`.execute(trx);
    });
    assert.deepEqual(await countsOf(tenant), { staged: 2, imported: 1, failed: 1, skipped: 0 });
    assert.deepEqual(await groupsOf(tenant), [{ code: 'internal_error', attr: null, count: 1, examples: ['RAW-2'] }]);
    const hours = (await call(t.app, 'GET', `/v1/data-import/stats/${tenant.supplier}/`, { token: tenant.token })).json.created_per_hour;
    assert.deepEqual(hours.map((h: { count: number }) => h.count).slice(-6), [1, 0, 0, 0, 0, 0]);
    // A rolled-back transaction leaves no trace in the counters.
    await db.transaction().execute(async (trx) => {
      await sql`INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES (${supplierId}, 'RAW-4', '{}')`.execute(trx);
      throw new Error('roll back');
    }).catch(() => {});
    assert.deepEqual(await countsOf(tenant), { staged: 2, imported: 1, failed: 1, skipped: 0 });
  });

  test('rebuild_stats_counters() recounts every supplier from the rows', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    await stage(t, tenant);
    assert.equal((await processAccount(t, tenant, (await stage(t, tenant)).external_account_number)).status, 201);
    await sql`UPDATE account_import_counts SET staged = staged + 5, failed = failed - 2 WHERE supplier_id = ${supplierId}`.execute(db);
    await sql`UPDATE accounts_created_per_hour SET created = created + 3 WHERE supplier_id = ${supplierId}`.execute(db);
    await sql`INSERT INTO account_error_group_counts (supplier_id, code, attr, shard, failed) VALUES (${supplierId}, 'ghost', '', 0, 4)`.execute(db);
    await assert.rejects(countsOf(tenant), /agree/);
    await sql`SELECT rebuild_stats_counters()`.execute(db);
    assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 0, skipped: 0 });
    assert.deepEqual(await groupsOf(tenant), []);
  });

  test('a job chunk and a create committing on the same shard take the counter rows in one order: neither is rolled back as a deadlock', { skip: PG_ONLY }, async () => {
    // A chunk stages before it creates (the state counter's row, then the hourly one); a create on
    // its own inserts the account before it marks the staging (the other way round). Both lock their
    // counter rows at commit, and the rows are the transaction's shard's: here two transactions are
    // given the same shard, and a third session holds the state counter's row until both wait.
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const teamId = (await db.selectFrom('operations_teams').select('id').where('name', '=', tenant.team).executeTakeFirstOrThrow()).id;
    await sql`INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES (${supplierId}, 'ORDER-B', '{}')`.execute(db);
    const [chunk, single, holder] = await Promise.all([pgSession(t.config.databaseUrl), pgSession(t.config.databaseUrl), pgSession(t.config.databaseUrl)]);
    const [chunkPid, singlePid] = await Promise.all([chunk, single].map(async (session) => (await session.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number));
    const waitsOnALock = (pid: number, who: string) => waitUntil(async () => (await sql<{ n: number }>`SELECT count(*)::int AS n
      FROM pg_stat_activity WHERE pid = ${pid} AND wait_event_type = 'Lock'`.execute(db)).rows[0]!.n === 1, `${who} waits on a lock`);
    const createAccount = (session: typeof chunk, ext: string) => session.query(`INSERT INTO accounts (number, account_import_id, supplier_id,
        external_account_number, operations_team_id, billing_street_address, billing_country, billing_postal_code, created_at)
      SELECT 'A-' || upper(substr(md5(random()::text), 1, 8)), id, supplier_id, external_account_number, $3, '1 Road', 'GB', 'BS1 5TY', '2026-01-01T10:00:00Z'
      FROM account_imports WHERE supplier_id = $1 AND external_account_number = $2 RETURNING id`, [supplierId, ext, teamId]);
    try {
      await chunk.query('BEGIN');
      const shard = Number((await chunk.query('SELECT txid_current() AS x')).rows[0].x) % 16;
      for (;;) {
        await single.query('BEGIN');
        if (Number((await single.query('SELECT txid_current() AS x')).rows[0].x) % 16 === shard) break;
        await single.query('ROLLBACK');
      }
      await sql`INSERT INTO account_import_counts (supplier_id, shard) VALUES (${supplierId}, ${shard}) ON CONFLICT DO NOTHING`.execute(db);
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM account_import_counts WHERE supplier_id = $1 AND shard = $2 FOR UPDATE', [supplierId, shard]);
      // The chunk's order: a staging, then its account.
      await chunk.query(`INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES ($1, 'ORDER-A', '{}')`, [supplierId]);
      await createAccount(chunk, 'ORDER-A');
      // The single create's order: the account, then its staging marked.
      const { rows: [account] } = await createAccount(single, 'ORDER-B');
      await single.query('UPDATE account_imports SET account_id = $1 WHERE supplier_id = $2 AND external_account_number = $3', [account.id, supplierId, 'ORDER-B']);
      const chunkCommit = chunk.query('COMMIT');
      await waitsOnALock(chunkPid!, 'the chunk\'s commit');
      const singleCommit = single.query('COMMIT');
      await waitsOnALock(singlePid!, 'the create\'s commit');
      await holder.query('COMMIT');
      const outcomes = await Promise.allSettled([chunkCommit, singleCommit]);
      assert.deepEqual(outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as { code?: string }).code) : 'committed')), ['committed', 'committed']);
      assert.deepEqual(await countsOf(tenant), { staged: 1, imported: 1, failed: 0, skipped: 0 });
    } finally {
      await Promise.all([chunk, single, holder].map(async (session) => { await session.query('ROLLBACK').catch(() => {}); await session.end(); }));
    }
  });

  test('concurrent creates, failures and stages: every change counted once, over several shards', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const toCreate = await Promise.all(Array.from({ length: 24 }, () => stage(t, tenant)));
    const toFail = await Promise.all(Array.from({ length: 8 }, () => stage(t, tenant)));
    const results = await Promise.all([
      ...toCreate.map((p) => processAccount(t, tenant, p.external_account_number).then((r) => r.status)),
      ...toFail.map((p) => processAccount(t, tenant, p.external_account_number, { operations_team_name: 'no-such-team' }).then((r) => r.status)),
      ...Array.from({ length: 8 }, () => call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: accountPayload(tenant.supplier) }).then((r) => r.status)),
    ]);
    assert.deepEqual(results, [...Array(24).fill(201), ...Array(8).fill(400), ...Array(8).fill(201)]);
    assert.deepEqual(await countsOf(tenant), { staged: 16, imported: 24, failed: 8, skipped: 0 });
    const { rows } = await sql<{ n: number }>`SELECT count(DISTINCT shard)::int AS n FROM account_import_counts WHERE supplier_id = ${supplierId}`.execute(db);
    assert.ok(rows[0]!.n > 1, `${rows[0]!.n} shard(s) written`);
  });
});

describe('a migration job\'s record counters', () => {
  test('records written with triggers off are counted by the rebuild; every write after it moves the counts', async () => {
    const tenant = await createTenant(t);
    const created = await call(t.app, 'POST', JOBS, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    assert.equal(created.status, 201, created.body);
    const id = created.json.id as string;
    const view = async () => (await call(t.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json.counts;
    // As rows loaded in bulk (or before the counters existed): no trigger moves the counts.
    await db.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await sql`INSERT INTO migration_job_records (job_id, line, outcome, finished_at)
        SELECT ${id}::uuid, l, CASE WHEN l <= 3 THEN 'failed' ELSE 'pending' END, CASE WHEN l <= 3 THEN now() END
        FROM generate_series(1, 10) AS l`.execute(trx);
    });
    assert.equal((await view()).total, 0, 'rows written with triggers off are not counted');
    await sql`SELECT rebuild_migration_job_record_counts()`.execute(db);
    assert.deepEqual(await view(), await countedRecords(db, id));
    assert.deepEqual(await view(), { total: 10, pending: 7, running: 0, succeeded: 0, skipped: 0, failed: 3, cancelled: 0 });
    // Written by the service, and by hand: each statement moves them.
    await sql`UPDATE migration_job_records SET outcome = 'skipped' WHERE job_id = ${id}::uuid AND line IN (4, 5)`.execute(db);
    await sql`DELETE FROM migration_job_records WHERE job_id = ${id}::uuid AND line = 1`.execute(db);
    assert.deepEqual(await view(), { total: 9, pending: 5, running: 0, succeeded: 0, skipped: 2, failed: 2, cancelled: 0 });
    // Each statement here was its own transaction, so the counts moved over several shards that the view sums.
    const { rows: [shards] } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM migration_job_record_counts WHERE job_id = ${id}::uuid`.execute(db);
    assert.ok(shards!.n > 1, `${shards!.n} shard row(s)`);
    assert.equal((await call(t.app, 'POST', `${JOBS}${id}/cancel/`, { token: tenant.token })).status, 200);
    assert.deepEqual(await view(), { total: 9, pending: 0, running: 0, succeeded: 0, skipped: 2, failed: 2, cancelled: 5 });
    assert.deepEqual(await view(), await countedRecords(db, id));
  });
});
