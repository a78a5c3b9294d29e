import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/admin.service.ts';
import { writeMigrationFile } from '../support/migration-file.ts';
import { request, startServer } from '../support/server-process.ts';
import { isolatedDatabaseUrl } from '../support/imports.ts';
import { unique } from '../support/test-app.ts';

// import-migrate reconcile end to end, as import-migrate.test.ts runs the client: the real service as
// a child process on this run's store, and the client spawned as users run it. Its exit status is
// what a go-live script reads: 0 balanced, 1 differs or not finished (or refused), 2 usage or no service.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'import-migrate-reconcile-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const dataDir = join(dir, 'data');

const databaseUrl = process.env.DATABASE_URL ? await isolatedDatabaseUrl() : undefined;
const tenant = { org: unique('org'), supplier: unique('SUP'), team: unique('team'), apiKey: '' };
{
  const store = await openStore({ databaseUrl, dataDir, poolSize: 1 });
  await migrate(store);
  tenant.apiKey = (await admin.createOrganisation(store.db, tenant.org)).api_key;
  await admin.createSupplier(store.db, tenant.supplier, tenant.org);
  await admin.createTeam(store.db, tenant.team);
  await store.close();
}
const server = await startServer({ DATABASE_URL: databaseUrl ?? '', DATA_DIR: dataDir, WORKER_CONCURRENCY: '3' }, 180_000);
after(() => server.stop());

interface Run { status: number | null; stdout: string; stderr: string }

function cli(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/import-migrate.js', ...args], {
      cwd: ROOT, timeout: 90_000,
      env: { ...process.env, IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_POLL_MS: '250', IMPORT_MIGRATE_RETRY_DELAY_MS: '50' },
    }, (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
  });
}
const migrateCli = (...args: string[]) => cli([...args, '--url', server.url]);

/** Runs a file of `lines` records (every third failing when `failing`) with the client; the job id. */
async function runBook(name: string, lines: number, failing: boolean): Promise<{ id: string; lines: string[] }> {
  const path = join(dir, name);
  const written = await writeMigrationFile(path, { supplier: tenant.supplier, lines, failEvery: failing ? 3 : undefined });
  const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--json');
  assert.equal(run.status, failing ? 1 : 0, run.stderr);
  return { id: JSON.parse(run.stdout).job.id as string, lines: written };
}

const HEADER = '  measure                 control  file  migrated  verdict';

describe('import-migrate reconcile', () => {
  test('a balanced job: the table, exit 0; --json is the report', async () => {
    const { id } = await runBook('good.ndjson', 3, false);
    const run = await migrateCli('reconcile', id);
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(lines[0], `Job ${id} (${tenant.supplier}) completed: BALANCED`);
    assert.match(lines[1]!, new RegExp(`^File: 3 lines \\(0 unparsable\\), sha256 [0-9a-f]{64}, uploaded by ${tenant.apiKey.split('.')[0]}$`));
    assert.equal(lines[2], HEADER);
    assert.equal(lines[3], '  accounts                      -     3         3  not_declared');
    assert.equal(lines[11], '  balance_total                 -  0.00      0.00  not_declared');
    assert.equal(lines[13], 'Exceptions: 0');
    const json = await migrateCli('reconcile', id, '--json');
    assert.equal(json.status, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    assert.equal(report.job_id, id);
    assert.equal(report.verdict, 'balanced');
  });

  test('a job that differs: exit 1, and --csv FILE writes the exceptions', async () => {
    const { id, lines } = await runBook('mixed.ndjson', 3, true);
    const csv = join(dir, 'exceptions.csv');
    const run = await migrateCli('reconcile', id, '--csv', csv);
    assert.equal(run.status, 1, run.stderr);
    assert.equal(run.stdout.split('\n')[0], `Job ${id} (${tenant.supplier}) completed: DIFFERS`);
    assert.ok(run.stdout.includes('\n  accounts                      -     3         2  differs\n'), run.stdout);
    assert.match(run.stdout, new RegExp(`\nExceptions: 1 \\(written to ${csv.replace(/[.]/g, '\\.')}\\)\n$`));
    const ext = JSON.parse(lines[2]!).account.external_account_number as string;
    assert.equal(readFileSync(csv, 'utf8'), `line,external_account_number,measure,file,migrated\r\n3,${ext},not_migrated,,\r\n`);
  });

  test('a job not finished is incomplete: exit 1', async () => {
    const token = (await request(server.url, 'POST', '/graphql', {
      body: { query: `mutation { obtainToken(input: {APIKey: "${tenant.apiKey}"}) { token } }` },
    })).json.data.obtainToken.token as string;
    const job = await request(server.url, 'POST', '/v1/data-import/migration-jobs/', {
      token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, control_totals: { accounts: 10 } },
    });
    assert.equal(job.status, 201, job.text);
    const run = await migrateCli('reconcile', job.json.id);
    assert.equal(run.status, 1, run.stderr);
    assert.equal(run.stdout.split('\n')[0], `Job ${job.json.id} (${tenant.supplier}) open: INCOMPLETE`);
    assert.ok(run.stdout.includes('\n  accounts                     10     0         0  differs\n'), run.stdout);
  });

  test('usage errors and an unreachable service exit 2; an unknown job is refused with 1', async () => {
    const missing = await migrateCli('reconcile');
    assert.equal(missing.status, 2);
    assert.equal(missing.stderr, 'import-migrate: missing JOB; usage: import-migrate reconcile JOB [--csv FILE]\n');
    const noFile = await migrateCli('reconcile', '00000000-0000-4000-8000-000000000000', '--csv');
    assert.equal(noFile.status, 2);
    assert.match(noFile.stderr, /^import-migrate: Option '--csv' argument is ambiguous/);
    const stray = await migrateCli('reconcile', '00000000-0000-4000-8000-000000000000', '--outcome', 'failed');
    assert.equal(stray.status, 2);
    assert.equal(stray.stderr, 'import-migrate: --outcome does not apply to reconcile; usage: import-migrate reconcile JOB [--csv FILE]\n');
    const down = await cli(['reconcile', '00000000-0000-4000-8000-000000000000', '--url', 'http://127.0.0.1:9']);
    assert.equal(down.status, 2, down.stderr);
    const unknown = await migrateCli('reconcile', '00000000-0000-4000-8000-000000000000');
    assert.equal(unknown.status, 1);
    assert.match(unknown.stderr, /^import-migrate: .*No migration job "00000000-0000-4000-8000-000000000000"\..*\n$/);
  });
});
