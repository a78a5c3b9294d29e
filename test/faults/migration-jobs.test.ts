import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { startFakeVendor } from '../support/fake-vendor.ts';
import { isolatedDatabaseUrl } from '../support/imports.ts';
import { pgClusterUnavailable, startPgCluster } from '../support/pg-cluster.ts';
import { request, startServer, type ServerProcess } from '../support/server-process.ts';
import { unique, type Tenant } from '../support/test-app.ts';
import { accountPayload, statement, transaction } from './fixtures.ts';
import { integrityProblems, openHarness, sessionsOf, tenantOf, waitFor, withAppName } from './integrity.ts';

// Migration jobs under faults (D11): PostgreSQL restarted in the middle of a job, and an instance
// killed (SIGKILL) in the middle of a job run by two. The job completes, every record has one
// outcome, and nothing was made twice.
const url = process.env.DATABASE_URL;
const skip = url ? false : 'needs PostgreSQL: set DATABASE_URL';
const noCluster = (await pgClusterUnavailable()) ?? false;
const JOBS = '/v1/data-import/migration-jobs/';
// Fast expiry of a dead worker's records, fast retries: the schedule a test can wait for.
const WORKER_ENV = {
  OUTBOX_INTERVAL_MS: '0', WORKER_CONCURRENCY: '6', JOB_RECORD_TIMEOUT_SECONDS: '8', QUEUE_MAINTENANCE_INTERVAL_SECONDS: '2',
  JOB_RETRY_DELAY_SECONDS: '1', JOB_RETRY_LIMIT: '8',
};

/**
 * `count` records: an account, one statement, `transactions(i)` transactions and `notes(i)` notes,
 * and a payment instruction (reference `PI-OK-i`) when `vendor` is given and `instruction(i)` holds.
 */
function records(tenant: Tenant, count: number, vendor: string | null, shape: {
  transactions?: (i: number) => number; notes?: (i: number) => number; instruction?: (i: number) => boolean;
} = {}): string {
  const lines: string[] = [];
  const { transactions = () => 2, notes = () => 1, instruction = () => true } = shape;
  for (let i = 0; i < count; i += 1) {
    const ext = `MJ-${process.pid}-${unique('x')}-${i}`;
    lines.push(JSON.stringify({
      account: accountPayload(tenant.supplier, ext),
      statements: [statement(0, `S-${i}`)],
      transactions: Array.from({ length: transactions(i) }, (_, k) => transaction(`T-${i}-${String.fromCharCode(97 + k)}`)),
      notes: Array.from({ length: notes(i) }, (_, k) => ({ body: k === 0 ? `Migrated ${i}` : `Migrated ${i}, note ${k + 1}` })),
      ...(vendor && instruction(i) ? { payment_instruction: { vendor, reference: `PI-OK-${i}`, type: 'CARD' } } : {}),
    }));
  }
  return `${lines.join('\n')}\n`;
}

async function runJob(base: string, tenant: Tenant, body: string): Promise<string> {
  const created = await request(base, 'POST', JOBS, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  assert.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const res = await fetch(`${base}${JOBS}${id}/records/`, {
    method: 'POST', body, headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
  });
  assert.equal(res.status, 200, await res.text());
  const started = await request(base, 'POST', `${JOBS}${id}/start/`, { token: tenant.token });
  assert.equal(started.status, 200, started.text);
  return id;
}

/** Nothing made twice: one account per external number, no repeated note, transaction, statement or instruction. */
async function duplicates(db: Kysely<Database>, supplier: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ kind: string; n: number }>`
    WITH a AS (SELECT ac.id, ac.external_account_number FROM accounts ac JOIN import_suppliers s ON s.id = ac.supplier_id WHERE s.code = ${supplier})
    SELECT 'accounts' AS kind, count(*)::int AS n FROM (SELECT external_account_number FROM a GROUP BY 1 HAVING count(*) > 1) x
    UNION ALL SELECT 'notes', count(*)::int FROM (SELECT n.account_id, n.body FROM notes n JOIN a ON a.id = n.account_id GROUP BY 1, 2 HAVING count(*) > 1) x
    UNION ALL SELECT 'transactions', count(*)::int FROM (SELECT t.account_id, t.transaction_id FROM transactions t JOIN a ON a.id = t.account_id GROUP BY 1, 2 HAVING count(*) > 1) x
    UNION ALL SELECT 'statements', count(*)::int FROM (SELECT t.account_id, t.statement_id FROM statements t JOIN a ON a.id = t.account_id GROUP BY 1, 2 HAVING count(*) > 1) x
    UNION ALL SELECT 'payment_instructions', count(*)::int FROM (SELECT p.account_id FROM payment_instructions p JOIN a ON a.id = p.account_id GROUP BY 1 HAVING count(*) > 1) x`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
}

const NONE = { accounts: 0, notes: 0, transactions: 0, statements: 0, payment_instructions: 0 };

async function recordCounts(db: Kysely<Database>, jobId: string) {
  const { rows } = await sql<{ outcome: string; n: number; lines: number }>`
    SELECT outcome, count(*)::int AS n, count(DISTINCT line)::int AS lines FROM migration_job_records WHERE job_id = ${jobId}::uuid GROUP BY 1 ORDER BY 1`.execute(db);
  return rows;
}

/** The rows of each kind the supplier's accounts hold. */
async function rowCounts(db: Kysely<Database>, supplier: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ kind: string; n: number }>`
    WITH a AS (SELECT ac.id FROM accounts ac JOIN import_suppliers s ON s.id = ac.supplier_id WHERE s.code = ${supplier})
    SELECT 'accounts' AS kind, count(*)::int AS n FROM a
    UNION ALL SELECT 'notes', count(*)::int FROM notes n JOIN a ON a.id = n.account_id
    UNION ALL SELECT 'transactions', count(*)::int FROM transactions t JOIN a ON a.id = t.account_id
    UNION ALL SELECT 'statements', count(*)::int FROM statements t JOIN a ON a.id = t.account_id
    UNION ALL SELECT 'payment_instructions', count(*)::int FROM payment_instructions p JOIN a ON a.id = p.account_id`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
}

/**
 * A database of the test's own with a tenant, and instances started on it, each named
 * `<prefix>-<pid>-<name>` in pg_stat_activity; all killed, and the harness closed, after the test.
 */
async function instancesOnOwnDatabase(prefix: string) {
  const dbUrl = await isolatedDatabaseUrl();
  const servers: ServerProcess[] = [];
  const h = await openHarness(dbUrl);
  after(async () => {
    for (const s of servers) await s.kill();
    await h.close().catch(() => {});
  });
  const startAs = async (name: string, env: Record<string, string>) => {
    const server = await startServer({ DATABASE_URL: withAppName(dbUrl, `${prefix}-${process.pid}-${name}`), ...env }, 60_000);
    servers.push(server);
    return server;
  };
  return { db: h.t.store.db, tenant: await tenantOf(h), startAs };
}

/** The job's record results (D11 `…/records/`), as NDJSON over HTTP. */
async function resultsOf(base: string, tenant: Tenant, id: string): Promise<any[]> {
  const res = await fetch(`${base}${JOBS}${id}/records/`, { headers: { authorization: `Token ${tenant.token}` }, signal: AbortSignal.timeout(60_000) });
  assert.equal(res.status, 200);
  return (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

describe('migration jobs under faults', { skip }, () => {
  test('PostgreSQL restarted mid-job: the job completes without a restart of the service', { skip: noCluster }, async (ctx) => {
    const COUNT = 300;
    const cluster = await startPgCluster();
    let server: ServerProcess | undefined;
    let h: Awaited<ReturnType<typeof openHarness>> | undefined;
    after(async () => {
      await server?.kill();
      await h?.close().catch(() => {});
      await cluster.destroy();
    });
    h = await openHarness(cluster.url);
    const db = h.t.store.db;
    const tenant = await tenantOf(h);
    server = await startServer({ DATABASE_URL: cluster.url, ...WORKER_ENV }, 60_000);
    const id = await runJob(server.url, tenant, records(tenant, COUNT, null));
    await waitFor('some records done', async () => (await recordCounts(db, id)).find((r) => r.outcome === 'succeeded')?.n ?? 0, (n) => n >= 30, 60_000);
    await cluster.stop();
    await sleep(2_000);
    await cluster.start();
    const job = await waitFor('the job completes', async () => (await request(server!.url, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json,
      (j) => j?.state === 'completed', 100_000);
    ctx.diagnostic(`completed with ${JSON.stringify(job.counts)}`);
    assert.equal(server.child.exitCode, null, 'the server process stayed up');
    assert.deepEqual(job.counts, { total: COUNT, pending: 0, running: 0, succeeded: COUNT, skipped: 0, failed: 0, cancelled: 0 });
    assert.deepEqual(await duplicates(db, tenant.supplier), NONE);
    assert.deepEqual(await integrityProblems(db, tenant.supplier), []);
  });

  test('kill -9 of one of two instances mid-job: the job completes, one outcome a record, nothing made twice', async (ctx) => {
    const COUNT = 2000;
    const shape = { transactions: (i: number) => 2 + (i % 3), notes: (i: number) => 1 + (i % 2), instruction: (i: number) => i % 4 === 0 };
    const expected = {
      accounts: COUNT, statements: COUNT,
      transactions: Array.from({ length: COUNT }, (_, i) => shape.transactions(i)).reduce((a, b) => a + b, 0),
      // The record's notes, and the one in each account's own data (made with the account).
      notes: Array.from({ length: COUNT }, (_, i) => shape.notes(i)).reduce((a, b) => a + b, COUNT),
      payment_instructions: Array.from({ length: COUNT }, (_, i) => shape.instruction(i)).filter(Boolean).length,
    };
    const { db, tenant, startAs } = await instancesOnOwnDatabase('faults-mj-kill');
    const vendor = await startFakeVendor();
    const vendorCode = unique('VEND');
    await admin.createVendor(db, vendorCode, { kind: 'http', url: vendor.url, timeoutMs: 2000 });
    for (let i = 0; i < COUNT; i += 1) if (shape.instruction(i)) vendor.set(`PI-OK-${i}`, 'found');

    // Both instances run workers; a record held by the killed one is given to another once its
    // queue job expires (JOB_RECORD_TIMEOUT_SECONDS), found by the queue's maintenance every 2 s.
    const env = { ...WORKER_ENV, WORKER_CONCURRENCY: '4', PROCESS_CONCURRENCY_LIMIT: '4', JOB_RECORD_TIMEOUT_SECONDS: '20', JOB_RETRY_LIMIT: '10' };
    const start = (name: string) => startAs(name, env);
    const [a, b] = await Promise.all([start('a'), start('b')]);
    const body = records(tenant, COUNT, vendorCode, shape);
    const externals = body.trimEnd().split('\n').map((l) => JSON.parse(l).account.external_account_number as string);
    const began = Date.now();
    const id = await runJob(a!.url, tenant, body);
    const succeeded = async () => (await recordCounts(db, id)).find((r) => r.outcome === 'succeeded')?.n ?? 0;
    await waitFor('some hundreds of records done', succeeded, (n) => n >= 400, 240_000);
    // The kill lands while instance b is inside a record: it holds an account lock or a create slot.
    await waitFor('instance b inside a record', async () => (await sessionsOf(db, `faults-mj-kill-${process.pid}-b`)).advisoryLocks, (n) => n > 0, 60_000);

    const runningAtKill = async () => (await sql<{ line: number }>`
      SELECT line FROM migration_job_records WHERE job_id = ${id}::uuid AND outcome = 'running'`.execute(db)).rows.map((r) => r.line);
    await b!.kill();
    const killedAt = Date.now();
    const doneAtKill = await succeeded();
    const inFlight = await runningAtKill();
    const replacing = start('c');
    replacing.catch(() => {}); // awaited below
    // The surviving instance finishes its own records within a few seconds; those still running 8 s
    // after the kill are the killed instance's, held until their queue jobs expire (20 s).
    await sleep(8_000);
    const stillRunning = new Set(await runningAtKill());
    const orphaned = inFlight.filter((line) => stillRunning.has(line));
    const replacement = await replacing;

    const job = await waitFor('the job completes', async () => (await request(a!.url, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json,
      (j) => j?.state === 'completed', 600_000);
    const finished = Date.now();
    const { rows: [tries] } = await sql<{ again: number; most: number }>`
      SELECT count(*) FILTER (WHERE attempts > 1)::int AS again, max(attempts)::int AS most FROM migration_job_records WHERE job_id = ${id}::uuid`.execute(db);
    ctx.diagnostic(`${doneAtKill} of ${COUNT} records succeeded ${((killedAt - began) / 1000).toFixed(1)} s after the start, when instance b was killed with ${inFlight.length} records running (of both instances)`);
    ctx.diagnostic(`${orphaned.length} of them were still running 8 s later (the killed instance's); records run more than once: ${tries!.again} (most tries: ${tries!.most})`);
    ctx.diagnostic(`completed ${((finished - killedAt) / 1000).toFixed(1)} s after the kill, ${((finished - began) / 1000).toFixed(1)} s in all (${Math.round(COUNT / ((finished - began) / 60_000))} records/min): ${JSON.stringify(job.counts)}`);

    assert.ok(orphaned.length > 0, 'the kill landed while the killed instance was running records');
    assert.equal(a!.child.exitCode, null, 'the surviving instance stayed up');
    assert.equal(replacement.child.exitCode, null, 'the replacement stayed up');
    assert.deepEqual(job.counts, { total: COUNT, pending: 0, running: 0, succeeded: COUNT, skipped: 0, failed: 0, cancelled: 0 });

    // Every line once, with one final outcome and its account's number.
    const results = await resultsOf(replacement.url, tenant, id);
    assert.deepEqual(results.map((r) => r.line), Array.from({ length: COUNT }, (_, i) => i + 1), 'every line appears exactly once, in order');
    const numbers = new Map((await db.selectFrom('accounts').select(['external_account_number', 'number'])
      .where('external_account_number', 'in', externals).execute()).map((r) => [r.external_account_number, r.number]));
    for (const r of results) {
      assert.equal(r.external_account_number, externals[r.line - 1], `line ${r.line}`);
      assert.deepEqual([r.outcome, r.step, r.errors], ['succeeded', null, []], `line ${r.line}: ${JSON.stringify(r)}`);
      assert.equal(r.service_account_number, numbers.get(r.external_account_number), `line ${r.line}: the number of its account`);
    }

    // Nothing made twice, nothing missing, every account whole.
    assert.deepEqual(await duplicates(db, tenant.supplier), NONE);
    assert.deepEqual(await rowCounts(db, tenant.supplier), expected);
    assert.deepEqual(await integrityProblems(db, tenant.supplier), []);
  });
  test('kill -9 of one of two instances mid-job, then pause and cancel: the job ends cancelled once the killed instance\'s records come back', async (ctx) => {
    const COUNT = 1500;
    const { db, tenant, startAs } = await instancesOnOwnDatabase('faults-mj-cancel');
    const env = { ...WORKER_ENV, WORKER_CONCURRENCY: '4', PROCESS_CONCURRENCY_LIMIT: '4', JOB_PAUSE_RECHECK_SECONDS: '1' };
    const start = (name: string) => startAs(name, env);
    const [a, b] = await Promise.all([start('a'), start('b')]);
    const id = await runJob(a!.url, tenant, records(tenant, COUNT, null));
    const succeeded = async () => (await recordCounts(db, id)).find((r) => r.outcome === 'succeeded')?.n ?? 0;
    await waitFor('some records done', succeeded, (n) => n >= 100, 240_000);
    await waitFor('instance b inside a record', async () => (await sessionsOf(db, `faults-mj-cancel-${process.pid}-b`)).advisoryLocks, (n) => n > 0, 60_000);
    await b!.kill();
    // Paused, then cancelled, while the killed instance's records are still running: they come back
    // when their queue jobs expire (JOB_RECORD_TIMEOUT_SECONDS, 8 s), to a job that is paused.
    assert.equal((await request(a!.url, 'POST', `${JOBS}${id}/pause/`, { token: tenant.token })).status, 200);
    const cancelled = await request(a!.url, 'POST', `${JOBS}${id}/cancel/`, { token: tenant.token });
    assert.equal(cancelled.status, 200, cancelled.text);
    const runningAtCancel = cancelled.json.counts.running as number;
    const job = await waitFor('the job ends cancelled', async () => (await request(a!.url, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json,
      (j) => j?.state === 'cancelled', 120_000);
    ctx.diagnostic(`${runningAtCancel} records running at the cancel; ended ${JSON.stringify(job.counts)}`);
    assert.ok(runningAtCancel > 0, 'the cancel found records the killed instance held');
    assert.equal(job.paused, false);
    assert.deepEqual([job.counts.total, job.counts.pending, job.counts.running], [COUNT, 0, 0]);
    assert.equal(job.counts.succeeded + job.counts.failed + job.counts.cancelled, COUNT);
    const byOutcome = Object.fromEntries((await recordCounts(db, id)).map((r) => [r.outcome, r.n]));
    assert.deepEqual(byOutcome, Object.fromEntries(Object.entries(job.counts).filter(([k, n]) => k !== 'total' && (n as number) > 0)));
    assert.deepEqual(await duplicates(db, tenant.supplier), NONE);
  });
});
