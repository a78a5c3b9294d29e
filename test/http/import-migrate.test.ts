import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { after, describe, test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { ApiSession, dataOf, type Job } from '../../src/cli/migrate/api-session.ts';
import { pace, summary } from '../../src/cli/migrate/format.ts';
import { runImportMigrate } from '../../src/cli/migrate/import-migrate.ts';
import { uploadRemaining } from '../../src/cli/migrate/upload.ts';
import { runImportAdmin } from '../../src/cli/import-admin.ts';
import { migrationRecord, writeMigrationFile } from '../support/migration-file.ts';
import { request, startServer } from '../support/server-process.ts';
import { isolatedDatabaseUrl, STAGE_URL } from '../support/imports.ts';
import { unique } from '../support/test-app.ts';
import { pgliteTemplate } from '../support/pglite-template.ts';

// import-migrate (D12) end to end: the real service as a child process on this run's store (a
// temporary embedded DATA_DIR, or DATABASE_URL), and the client spawned as users run it (the bin).
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'import-migrate-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const dataDir = join(dir, 'data');

// The tenant is made before the server starts: the embedded store serves one process at a time.
const databaseUrl = process.env.DATABASE_URL ? await isolatedDatabaseUrl() : undefined;
const tenant = { org: unique('org'), supplier: unique('SUP'), team: unique('team'), apiKey: '' };
{
  const store = await openStore({ databaseUrl, dataDir, initialData: databaseUrl ? undefined : await pgliteTemplate(), poolSize: 1 });
  await migrate(store);
  tenant.apiKey = (await admin.createOrganisation(store.db, tenant.org)).api_key;
  await admin.createSupplier(store.db, tenant.supplier, tenant.org);
  await admin.createTeam(store.db, tenant.team);
  await store.close();
}
const server = await startServer({
  DATABASE_URL: databaseUrl ?? '', DATA_DIR: dataDir, WORKER_CONCURRENCY: '3',
}, 180_000);
after(() => server.stop());

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const BASE = '/v1/data-import/migration-jobs/';
/** Jobs one test makes for the next (tests of a file run in order). */
const made = { mixedJob: '' };

interface Run { status: number | null; stdout: string; stderr: string }

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/import-migrate.js', ...args], {
      cwd: ROOT, timeout: 90_000,
      env: {
        ...process.env, IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_POLL_MS: '250', IMPORT_MIGRATE_PROGRESS_MS: '60000',
        IMPORT_MIGRATE_RETRY_DELAY_MS: '50', ...env,
      },
    }, (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
  });
}
const migrateCli = (...args: string[]) => cli([...args, '--url', server.url]);

async function token(): Promise<string> {
  const res = await request(server.url, 'POST', '/graphql', {
    body: { query: `mutation { obtainToken(input: {APIKey: "${tenant.apiKey}"}) { token } }` },
  });
  return res.json.data.obtainToken.token;
}

/** A file of `lines` records; every third one fails (invalid mobile) when `failing`. */
async function file(name: string, lines: number, failing = false): Promise<{ path: string; lines: string[] }> {
  const path = join(dir, name);
  return { path, lines: await writeMigrationFile(path, { supplier: tenant.supplier, lines, failEvery: failing ? 3 : undefined }) };
}

const externalOf = (line: string): string => JSON.parse(line).account.external_account_number;

/** A new open job with `body` uploaded to it as it is (a file cut short): its id, the auth header and the upload's answer. */
async function jobHolding(body: string) {
  const auth = { authorization: `Token ${await token()}` };
  const created = await request(server.url, 'POST', BASE, { headers: auth, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  assert.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const res = await fetch(`${server.url}${BASE}${id}/records/`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body });
  return { id, auth, uploaded: await res.json() };
}

/** A job of one good record, started with not_before far ahead: scheduled, nothing run. */
async function scheduledJob(): Promise<string> {
  const auth = { authorization: `Token ${await token()}` };
  const created = await request(server.url, 'POST', BASE, {
    headers: auth, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, not_before: '2099-01-01T00:00:00Z' },
  });
  const id = created.json.id as string;
  await fetch(`${server.url}${BASE}${id}/records/`, {
    method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body: JSON.stringify(migrationRecord(tenant.supplier, false)),
  });
  assert.equal((await request(server.url, 'POST', `${BASE}${id}/start/`, { headers: auth })).json.state, 'scheduled');
  return id;
}
/** How a usage error of `run` ends (the synopsis, its lines joined by "; "). */
const RUN_USAGE = 'usage: import-migrate run FILE --supplier CODE --team NAME [--dry-run] [--on-drift warn|fail] [--not-before T] [--not-after T] [--max-rate N] [--control-totals TOTALS.json]; import-migrate run FILE --resume JOB';

/** import-admin beside the running server: through its admin socket (embedded store), or on PostgreSQL itself. */
async function adminCli(argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await runImportAdmin(argv, {
    env: { ...process.env, DATABASE_URL: databaseUrl ?? '', DATA_DIR: dataDir }, out: (text) => { stdout += text; }, err: (text) => { stderr += text; },
  });
  return { status, stdout, stderr };
}
const PHONE_ERROR = {
  code: 'invalid_phone_number', attr: 'account.customers.0.mobile', detail: 'Enter a valid phone number in international format with a leading +.',
};

describe('import-migrate run', () => {
  test('good and failing records: exit 1, the summary, the failures file with the failed results', async () => {
    const { path, lines } = await file('mixed.ndjson', 6, true);
    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team);
    assert.equal(run.status, 1, run.stderr);
    const id = new RegExp(`^Job (${UUID}) `).exec(run.stdout)?.[1];
    assert.ok(id, run.stdout);
    const failures = `${path}.${id}.failed.ndjson`;
    assert.equal(run.stdout.replace(/ in \d+s/, ' in Ns'), [
      `Job ${id} completed in Ns`,
      '  succeeded  4', '  skipped    0', '  failed     2',
      '             2  before the account existed (the line, or the account step)',
      '             0  on an existing account (a later step: part of its history)',
      '  cancelled  0', '  total      6',
      'Failures by step and code (each record under every code it has; top errors count its first only):',
      '  account  invalid_phone_number 2',
      `Failed records: ${failures}`,
      '',
    ].join('\n'));
    const stderr = run.stderr.split('\n');
    assert.equal(stderr[0], `created job ${id} for supplier ${tenant.supplier}`);
    assert.ok(stderr.includes(`uploaded 6 records (${(statSync(path).size / 1024).toFixed(1)} KiB)`), run.stderr);
    // A job of seconds says how long it took, not a per-minute rate extrapolated from seconds.
    assert.match(run.stderr, new RegExp(`\\njob ${id} completed: 6/6 done \\(100%\\), 2 failed, 6 records in \\d+ s; top errors: invalid_phone_number 2\\n$`));

    const written = readFileSync(failures, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(written.map((r) => ({ ...r, finished_at: 'AT' })), [3, 6].map((line) => ({
      line, external_account_number: externalOf(lines[line - 1]!), outcome: 'failed', step: 'account', created: null,
      service_account_number: null, dry_run: false, errors: [PHONE_ERROR], warnings: [], finished_at: 'AT',
    })));
    made.mixedJob = id!;
  });

  test('--json: one JSON object with the job, the upload and the failures file; --dry-run reaches the job', async () => {
    const { path } = await file('good.ndjson', 3);
    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--dry-run', '--json');
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^\{.*\}\n$/);
    const out = JSON.parse(run.stdout);
    assert.match(out.job.id, new RegExp(`^${UUID}$`));
    assert.deepEqual({ ...out, job: { ...out.job, id: 'ID', created_at: 'T', started_at: 'T', finished_at: 'T', records_per_minute: 0 } }, {
      job: {
        id: 'ID', import_supplier: tenant.supplier, operations_team_name: tenant.team, dry_run: true, on_drift: 'warn', state: 'completed', paused: false,
        max_records_per_minute: null, not_before: null, not_after: null, created_at: 'T', started_at: 'T', finished_at: 'T',
        counts: { total: 3, pending: 0, running: 0, succeeded: 3, skipped: 0, failed: 0, cancelled: 0 },
        records_with_warnings: 0, errors_by_code: [], records_per_minute: 0, eta_seconds: null,
      },
      upload: { received: 3, total_records: 3, skipped: 0 },
      failures_file: null,
    });
  });

  test('--dry-run prints the pre-flight by step and code and writes the failures file; --on-drift reaches the job', async () => {
    const { path, lines } = await file('preflight.ndjson', 6, true);
    // Line 7 repeats line 1's account: within the file, the later line fails.
    appendFileSync(path, `${lines[0]}\n`);
    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--dry-run', '--on-drift', 'fail');
    assert.equal(run.status, 1, run.stderr);
    const id = new RegExp(`^Job (${UUID}) `).exec(run.stdout)?.[1];
    assert.ok(id, run.stdout);
    const text = run.stdout.split('\n');
    assert.equal(text[0]!.replace(/ in \d+s/, ''), `Job ${id} completed (dry run)`);
    assert.deepEqual(text.slice(text.indexOf('Failures by step and code (each record under every code it has; top errors count its first only):')), [
      'Failures by step and code (each record under every code it has; top errors count its first only):',
      '  account  invalid_phone_number 2, duplicate_in_file 1',
      `Failed records: ${path}.${id}.failed.ndjson`,
      'A pre-flight: nothing was written. The real run of this file, on a store that has not changed, gives each record this outcome.',
      '',
    ]);
    const written = readFileSync(`${path}.${id}.failed.ndjson`, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(written.map((r) => [r.line, r.dry_run, r.errors[0].code]), [[3, true, 'invalid_phone_number'], [6, true, 'invalid_phone_number'], [7, true, 'duplicate_in_file']]);
    const job = await request(server.url, 'GET', `${BASE}${id}/`, { token: await token() });
    assert.deepEqual([job.json.dry_run, job.json.on_drift], [true, 'fail']);
    const bad = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--on-drift', 'maybe');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--on-drift must be warn/);
  });

  test('a .ndjson.gz file is uploaded compressed and read whole', async () => {
    const { path, lines } = await file('book.ndjson', 4, true);
    writeFileSync(`${path}.gz`, gzipSync(readFileSync(path)));
    const run = await migrateCli('run', `${path}.gz`, '--supplier', tenant.supplier, '--team', tenant.team, '--json');
    assert.equal(run.status, 1, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.deepEqual(out.job.counts, { total: 4, pending: 0, running: 0, succeeded: 3, skipped: 0, failed: 1, cancelled: 0 });
    assert.equal(out.failures_file, `${path}.gz.${out.job.id}.failed.ndjson`);
    const failed = readFileSync(out.failures_file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(failed.map((r) => [r.line, r.external_account_number]), [[3, externalOf(lines[2]!)]]);
  });

  test('--resume uploads only the lines after the job\'s counts.total, each line once', async () => {
    const records = Array.from({ length: 5 }, () => JSON.stringify(migrationRecord(tenant.supplier, false)));
    // Blank lines do not count as records: the skip must count them the way the service does.
    const text = `${records[0]}\n\n${records[1]}\n \r\n${records[2]}\n${records[3]}\n\n${records[4]}`;
    const path = join(dir, 'resume.ndjson');
    writeFileSync(path, text);
    const { id, auth, uploaded } = await jobHolding(text.split('\n').slice(0, 3).join('\n'));
    assert.deepEqual(uploaded, { received: 2, total_records: 2 });

    const run = await migrateCli('run', path, '--resume', id, '--json');
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.ok(run.stderr.startsWith(`resuming job ${id}: it holds 2 records, so the first 2 lines of ${path} are skipped\n`), run.stderr);
    assert.deepEqual(out.upload, { received: 3, total_records: 5, skipped: 2 });
    assert.deepEqual(out.job.counts, { total: 5, pending: 0, running: 0, succeeded: 5, skipped: 0, failed: 0, cancelled: 0 });
    const results = await fetch(`${server.url}${BASE}${id}/records/`, { headers: auth });
    const numbers = (await results.text()).trimEnd().split('\n').map((l) => JSON.parse(l)).map((r) => [r.line, r.external_account_number, r.outcome]);
    assert.deepEqual(numbers, records.map((r, i) => [i + 1, externalOf(r), 'succeeded']));

    // The job is completed and has every line: resuming again uploads nothing and only reports.
    const again = await migrateCli('run', path, '--resume', id, '--json');
    assert.equal(again.status, 0, again.stderr);
    assert.equal(JSON.parse(again.stdout).upload, undefined);
    assert.ok(again.stderr.startsWith(`resuming job ${id}: it is completed and holds all 5 records of ${path}; nothing to upload\n`), again.stderr);
  });

  test('a file that starts with a byte order mark and a blank line: counted as the service counts it, resumed with each line once', async () => {
    // The service drops the mark, so its line is blank; counted as a record, the resume (and the
    // retry after a dropped connection, the same code) skipped one line too few and sent one twice.
    const records = Array.from({ length: 4 }, () => JSON.stringify(migrationRecord(tenant.supplier, false)));
    const text = `\uFEFF\n${records.join('\n')}\n`;
    const path = join(dir, 'bom.ndjson');
    writeFileSync(path, text);
    const { id, auth, uploaded } = await jobHolding(text.split('\n').slice(0, 3).join('\n'));
    assert.deepEqual(uploaded, { received: 2, total_records: 2 });
    const run = await migrateCli('run', path, '--resume', id, '--json');
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).upload, { received: 2, total_records: 4, skipped: 2 });
    const results = await fetch(`${server.url}${BASE}${id}/records/`, { headers: auth });
    assert.deepEqual((await results.text()).trimEnd().split('\n').map((l) => JSON.parse(l)).map((r) => [r.line, r.external_account_number, r.outcome]),
      records.map((r, i) => [i + 1, externalOf(r), 'succeeded']));
    const again = await migrateCli('run', path, '--resume', id);
    assert.equal(again.status, 0, again.stderr);
    assert.ok(again.stderr.startsWith(`resuming job ${id}: it is completed and holds all 4 records of ${path}; nothing to upload\n`), again.stderr);
  });

  test('--resume after a line the service could not read (it keeps no account number for it) goes on', async () => {
    const records = Array.from({ length: 3 }, () => JSON.stringify(migrationRecord(tenant.supplier, false)));
    // Line 2 names an account, but the service refuses to read it (a __proto__ key): failed at parse, no number kept.
    const unreadable = `{"__proto__":{"x":1},${records[1]!.slice(1)}`;
    const lines = [records[0]!, unreadable, records[2]!];
    const path = join(dir, 'unreadable-last.ndjson');
    writeFileSync(path, `${lines.join('\n')}\n`);
    const { id, uploaded } = await jobHolding(lines.slice(0, 2).join('\n'));
    assert.deepEqual(uploaded, { received: 2, total_records: 2 });
    const run = await migrateCli('run', path, '--resume', id, '--json');
    assert.equal(run.status, 1, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).upload, { received: 1, total_records: 3, skipped: 2 });
    assert.deepEqual(JSON.parse(run.stdout).job.counts, { total: 3, pending: 0, running: 0, succeeded: 2, skipped: 0, failed: 1, cancelled: 0 });
  });

  test('--resume after a line that was not JSON, with that line since deleted from the file, is refused (exit 1): the next line would never be sent', async () => {
    const records = Array.from({ length: 3 }, () => JSON.stringify(migrationRecord(tenant.supplier, false)));
    const { id, uploaded } = await jobHolding([records[0]!, 'this is not json'].join('\n'));
    assert.deepEqual(uploaded, { received: 2, total_records: 2 });
    const path = join(dir, 'bad-line-deleted.ndjson');
    writeFileSync(path, `${records.join('\n')}\n`);
    assert.deepEqual(await migrateCli('run', path, '--resume', id), { status: 1, stdout: '', stderr: `import-migrate: line 2 of ${path} is JSON `
      + `where job ${id} has a line that is not: it is not the file the job was uploaded from (or lines were added or removed before that one); `
      + 'nothing was uploaded: resume with the file as it was uploaded, or send this one in a new job\n' });
    // The same for a line that was JSON but not an object.
    const array = await jobHolding([records[0]!, '[1, 2]'].join('\n'));
    assert.equal((await migrateCli('run', path, '--resume', array.id)).stderr, `import-migrate: line 2 of ${path} is a JSON object `
      + `where job ${array.id} has a line that is not: it is not the file the job was uploaded from (or lines were added or removed before that one); `
      + 'nothing was uploaded: resume with the file as it was uploaded, or send this one in a new job\n');
  });

  test('--resume with a file that is not the one uploaded (a line removed before the job\'s last) is refused (exit 1), nothing sent', async () => {
    const { path, lines } = await file('changed.ndjson', 5);
    const { id, auth, uploaded } = await jobHolding(lines.slice(0, 3).join('\n'));
    assert.deepEqual(uploaded, { received: 3, total_records: 3 });
    const held = async () => (await request(server.url, 'GET', `${BASE}${id}/`, { headers: auth })).json;
    const tail = 'it is not the file the job was uploaded from (or lines were added or removed before that one); '
      + 'nothing was uploaded: resume with the file as it was uploaded, or send this one in a new job';

    // Line 2 deleted: skipping the job's 3 lines would skip line 4 of the file as it was, never sent.
    writeFileSync(path, `${[lines[0], lines[2], lines[3], lines[4]].join('\n')}\n`);
    assert.deepEqual(await migrateCli('run', path, '--resume', id), { status: 1, stdout: '', stderr: `import-migrate: line 3 of ${path} has `
      + `account "${externalOf(lines[3]!)}" where job ${id} has account "${externalOf(lines[2]!)}": ${tail}\n` });
    // A line that is not a record where the job has one, and a file shorter than what the job holds.
    writeFileSync(path, `${[lines[0], lines[1], 'not json', lines[3]].join('\n')}\n`);
    assert.equal((await migrateCli('run', path, '--resume', id)).stderr, `import-migrate: line 3 of ${path} has `
      + `no account number where job ${id} has account "${externalOf(lines[2]!)}": ${tail}\n`);
    writeFileSync(path, `${lines[0]}\n\n${lines[1]}\n`);
    assert.deepEqual(await migrateCli('run', path, '--resume', id), { status: 1, stdout: '', stderr: `import-migrate: ${path} has fewer than the 3 records `
      + `job ${id} holds: it is not the file the job was uploaded from; nothing was uploaded: resume with the file as it was uploaded, or send this one in a new job\n` });
    const job = await held();
    assert.deepEqual([job.state, job.counts.total], ['open', 3]);

    // The file as it was (blank lines and a CRLF do not change which lines the job holds): resumed.
    writeFileSync(path, `\n${lines[0]}\r\n \n${lines.slice(1).join('\n')}\n`);
    const run = await migrateCli('run', path, '--resume', id, '--json');
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).upload, { received: 2, total_records: 5, skipped: 3 });
  });

  test('--resume of a started job that lacks lines of the file is refused (exit 1)', async () => {
    const { path } = await file('longer.ndjson', 3);
    const auth = { authorization: `Token ${await token()}` };
    const created = await request(server.url, 'POST', BASE, { headers: auth, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const id = created.json.id as string;
    await fetch(`${server.url}${BASE}${id}/records/`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body: readFileSync(path, 'utf8').split('\n')[0],
    });
    await request(server.url, 'POST', `${BASE}${id}/start/`, { headers: auth });
    const run = await migrateCli('run', path, '--resume', id);
    assert.equal(run.status, 1);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, new RegExp(`^import-migrate: job ${id} is (queued|running|completed) with 1 of the 3 records of ${path.replace(/[.]/g, '\\.')}; `
      + 'it takes no more records: upload the rest in a new job\\n$'));
  });
  test('run --not-after T reaches the job it creates; a time without its UTC Z is refused (exit 2)', async () => {
    const { path } = await file('not-after.ndjson', 2);
    const notAfter = '2099-06-30T12:00:00Z';
    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--not-after', notAfter, '--json');
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.deepEqual([out.job.not_after, out.job.not_before, out.job.state, out.job.counts.succeeded], [notAfter, null, 'completed', 2]);
    const job = await request(server.url, 'GET', `${BASE}${out.job.id}/`, { token: await token() });
    assert.equal(job.json.not_after, notAfter);
    // No job is made for a time that is not UTC: refused before the service is asked.
    for (const local of ['2099-01-01', '2099-01-01T00:00:00', '2099-01-01T00:00:00+01:00']) {
      assert.deepEqual(await inProcess(['run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--not-after', local, '--url', server.url]), {
        status: 2, stdout: '', stderr: `import-migrate: --not-after must be a UTC time like 2026-01-31T22:00:00Z; ${RUN_USAGE}\n`,
      }, local);
    }
  });

  test('on a terminal: an upload bar and a records bar on stderr, each drawn to its end; the summary on stdout', async () => {
    const { path } = await file('bars.ndjson', 3);
    let screen = '';
    const tty = Object.assign(new Writable({ write(chunk, _encoding, done) { screen += String(chunk); done(); } }), { isTTY: true, columns: 160, rows: 40 });
    let stdout = '';
    let stderr = '';
    const status = await runImportMigrate(['run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--url', server.url], {
      env: { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_POLL_MS: '250' },
      out: (text) => { stdout += text; }, err: (text) => { stderr += text; }, tty: tty as unknown as NodeJS.WriteStream, stdout: process.stdout,
    });
    assert.equal(status, 0, stderr);
    assert.match(stdout, new RegExp(`^Job ${UUID} completed in \\d+s\n  succeeded  3\n`));
    // What the terminal shows once the cursor movements are taken out: the last drawing of each bar.
    const lines = screen.split('\u001b').flatMap((part) => part.replace(/^\[[0-9;?]*[A-Za-z]/, '').split('\n')).filter((line) => line.trim() !== '');
    const last = (label: string) => lines.filter((line) => line.startsWith(` ${label} |`)).at(-1);
    assert.match(last('upload ') ?? '', /^ upload {2}\|█{40}\| 100% 3 records, \d[\d.]* (B|KiB|MiB)$/, screen);
    assert.match(last('records') ?? '', /^ records \|█{40}\| 100% 3\/3 completed, [^,]+, 0 failed$/, screen);
    assert.ok(screen.includes('\x1b[?25l') && screen.includes('\x1b[?25h'), 'the cursor is hidden while drawing, and shown again');
  });

  test('--control-totals declares the legacy figures: reconcile sets them beside the file\'s and the store\'s; one the service refuses is named (exit 1)', async () => {
    const { path } = await file('declared.ndjson', 2);
    const totals = join(dir, 'totals.json');
    writeFileSync(totals, JSON.stringify({ accounts: 2, notes: 99 }));
    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--control-totals', totals, '--json');
    assert.equal(run.status, 0, run.stderr);
    const id = JSON.parse(run.stdout).job.id as string;
    const reconcile = await migrateCli('reconcile', id, '--json');
    assert.equal(reconcile.status, 1, 'the notes differ from the declared figure');
    const measures = Object.fromEntries((JSON.parse(reconcile.stdout).measures as Array<{ measure: string; control: unknown; file: unknown; migrated: unknown; verdict: string }>)
      .map((m) => [m.measure, [m.control, m.file, m.migrated, m.verdict]]));
    assert.deepEqual(measures.accounts, [2, 2, 2, 'balanced']);
    assert.deepEqual(measures.notes?.[0], 99);
    assert.equal(measures.notes?.[3], 'differs');
    assert.equal(measures.customers?.[0], null, 'a figure not declared');

    writeFileSync(totals, JSON.stringify({ balance_total: -12.5 }));
    const refused = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--control-totals', totals);
    assert.deepEqual(refused, { status: 1, stdout: '',
      stderr: 'import-migrate: The request failed validation: control_totals.balance_total: Expected a string. (invalid, HTTP 400)\n' });
  });

  test('a skipped record is not a failure: exit 0, and the summary counts it', async () => {
    const skipped = migrationRecord(tenant.supplier, false) as { account: { external_account_number: string } };
    const records = [migrationRecord(tenant.supplier, false), skipped, migrationRecord(tenant.supplier, false)];
    const path = join(dir, 'with-skipped.ndjson');
    writeFileSync(path, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
    // Staged and marked to skip before the run (import-admin account skip, beside the running server).
    const staged = await request(server.url, 'POST', STAGE_URL, { token: await token(), body: skipped.account });
    assert.ok([200, 201].includes(staged.status), staged.text);
    const skip = await adminCli(['account', 'skip', tenant.supplier, skipped.account.external_account_number]);
    assert.equal(skip.status, 0, skip.stderr);

    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team);
    assert.equal(run.status, 0, run.stderr);
    const id = new RegExp(`^Job (${UUID}) `).exec(run.stdout)?.[1];
    assert.ok(id, run.stdout);
    assert.equal(run.stdout.replace(/ in \d+s/, ' in Ns'), [
      `Job ${id} completed in Ns`, '  succeeded  2', '  skipped    1', '  failed     0', '  cancelled  0', '  total      3', '',
    ].join('\n'));
    const results = await migrateCli('results', id!);
    assert.deepEqual(results.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)).map((r) => [r.line, r.external_account_number, r.outcome]),
      records.map((r, i) => [i + 1, (r as typeof skipped).account.external_account_number, i === 1 ? 'skipped' : 'succeeded']));
    const json = await migrateCli('watch', id!, '--json');
    assert.equal(json.status, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout).job.counts, { total: 3, pending: 0, running: 0, succeeded: 2, skipped: 1, failed: 0, cancelled: 0 });
  });
});

describe('import-migrate job commands', () => {
  test('status, results (NDJSON and --csv), jobs', async () => {
    const id = made.mixedJob;
    assert.ok(id, 'the run test made the job');
    const status = await migrateCli('status', id);
    assert.equal(status.status, 0);
    assert.equal(status.stdout.replace(/ in \d+s/, ' in Ns'), [
      `Job ${id} completed in Ns`, '  succeeded  4', '  skipped    0', '  failed     2',
      '             2  before the account existed (the line, or the account step)',
      '             0  on an existing account (a later step: part of its history)',
      '  cancelled  0', '  total      6',
      'Failures by step and code (each record under every code it has; top errors count its first only):',
      '  account  invalid_phone_number 2', '',
    ].join('\n'));

    const csv = await migrateCli('results', id, '--csv', '--outcome', 'failed');
    assert.equal(csv.status, 0, csv.stderr);
    const rows = csv.stdout.trimEnd().split('\r\n');
    assert.equal(rows[0], 'line,external_account_number,outcome,step,service_account_number,error_code,error_attr,error_detail,error_count,warning_count,first_warning_code');
    assert.deepEqual(rows.slice(1).map((r) => r.replace(/EXT-\w+/, 'EXT')), [3, 6].map((line) =>
      `${line},EXT,failed,account,,invalid_phone_number,account.customers.0.mobile,${PHONE_ERROR.detail},1,0,`));

    const ndjson = await migrateCli('results', id);
    assert.deepEqual(ndjson.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)).map((r) => [r.line, r.outcome]),
      [[1, 'succeeded'], [2, 'succeeded'], [3, 'failed'], [4, 'succeeded'], [5, 'succeeded'], [6, 'failed']]);

    const jobs = await migrateCli('jobs', '--supplier', tenant.supplier, '--json');
    assert.equal(jobs.status, 0);
    const listed = JSON.parse(jobs.stdout).jobs as Array<{ id: string; import_supplier: string }>;
    assert.ok(listed.some((j) => j.id === id));
    assert.deepEqual([...new Set(listed.map((j) => j.import_supplier))], [tenant.supplier]);
    const table = await migrateCli('jobs', '--supplier', tenant.supplier);
    assert.equal(table.stdout.split('\n')[0], 'id                                    state      created_at            total  failed');
    assert.match(table.stdout, new RegExp(`\\n${id}  completed  \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ      6       2\\n`));
  });

  test('cancel of a finished job is refused (exit 1); retry queues the failed records, watch follows them', async () => {
    const id = made.mixedJob;
    const cancel = await migrateCli('cancel', id);
    assert.deepEqual(cancel, { status: 1, stdout: '', stderr: `import-migrate: Migration job "${id}" is already completed. (migration_job_finished, HTTP 400)\n` });
    const retry = await migrateCli('retry', id);
    assert.equal(retry.status, 0, retry.stderr);
    assert.equal(retry.stdout, `Job ${id} is queued: 2 records to run again.\nFollow it with: import-migrate watch ${id} --url ${server.url}\n`);
    const watch = await migrateCli('watch', id, '--json');
    assert.equal(watch.status, 1);
    const out = JSON.parse(watch.stdout);
    assert.deepEqual([out.job.state, out.job.counts.failed, out.failures_file], ['completed', 2, null]);
  });

  test('cancel of a scheduled job', async () => {
    const id = await scheduledJob();
    const cancel = await migrateCli('cancel', id, '--json');
    assert.equal(cancel.status, 0, cancel.stderr);
    const job = JSON.parse(cancel.stdout);
    assert.deepEqual([job.id, job.state, job.counts.cancelled], [id, 'cancelled', 1]);
  });

  test('pause and resume a job; resume of a job not paused is refused (exit 1)', async () => {
    const id = await scheduledJob();
    const pause = await migrateCli('pause', id);
    assert.deepEqual(pause, { status: 0, stderr: '', stdout:
      `Job ${id} is paused: no record starts until it is resumed; 0 running finish.\nResume it with: import-migrate resume ${id}\n` });
    const resume = await migrateCli('resume', id, '--json');
    assert.equal(resume.status, 0, resume.stderr);
    assert.deepEqual([JSON.parse(resume.stdout).state, JSON.parse(resume.stdout).paused], ['scheduled', false]);
    const again = await migrateCli('resume', id);
    assert.deepEqual(again, { status: 1, stdout: '', stderr: `import-migrate: Migration job "${id}" was not paused. (migration_job_not_paused, HTTP 400)\n` });
    assert.equal((await migrateCli('cancel', id)).status, 0);
  });

  test('run --max-rate N throttles the job it creates', async () => {
    const { path } = await file('throttled.ndjson', 2);
    const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--max-rate', '600', '--json');
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout);
    assert.deepEqual([out.job.state, out.job.max_records_per_minute, out.job.counts.succeeded], ['completed', 600, 2]);
  });

  test('Ctrl-C while watching leaves the job as it is and says how to re-attach (exit 130)', async () => {
    const { path } = await file('later.ndjson', 2);
    const child = spawn(process.execPath, ['bin/import-migrate.js', 'run', path, '--supplier', tenant.supplier, '--team', tenant.team,
      '--not-before', '2099-01-01T00:00:00Z', '--url', server.url], { cwd: ROOT, env: { ...process.env, IMPORT_API_KEY: tenant.apiKey } });
    let stderr = '';
    let stdout = '';
    let interrupted = false;
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (!interrupted && / scheduled: /.test(stderr)) interrupted = child.kill('SIGINT');
    });
    const [status] = await once(child, 'exit');
    assert.equal(status, 130, stderr);
    assert.equal(stdout, '');
    const id = /^created job (\S+) /.exec(stderr)![1]!;
    assert.ok(stderr.endsWith(`\nStopped watching. Job ${id} goes on running on the service.\nRe-attach with: import-migrate watch ${id} --url ${server.url}\n`), stderr);
    const job = await request(server.url, 'GET', `${BASE}${id}/`, { token: await token() });
    assert.deepEqual([job.json.state, job.json.counts.pending], ['scheduled', 2]);
  });

  test('an unknown job: exit 1 with the service\'s reason', async () => {
    const run = await migrateCli('status', '00000000-0000-4000-8000-000000000000');
    assert.deepEqual(run, { status: 1, stdout: '', stderr: 'import-migrate: No migration job "00000000-0000-4000-8000-000000000000". (not_found, HTTP 404)\n' });
  });
});

describe('import-migrate client details', () => {
  test('a token is renewed with its refresh token a minute before it expires, so a long watch never meets a 401', async (ctx) => {
    // A recording proxy in front of the service: which way each token was obtained, and every answer.
    const seen: string[] = [];
    const target = new URL(server.url);
    const proxy = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const path = req.url === '/graphql' ? `/graphql with ${/obtainToken\(input: \{(\w+):/.exec(body.toString())?.[1]}` : 'the job';
        httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
          seen.push(`${req.method} ${path}: ${answer.statusCode}`);
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        }).end(body);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    after(() => new Promise((resolve) => proxy.close(resolve)));
    const id = await scheduledJob();
    const session = new ApiSession(`http://127.0.0.1:${(proxy.address() as { port: number }).port}`, tenant.apiKey, { attempts: 1, baseDelayMs: 10 });
    const look = async () => dataOf(await session.client.GET('/v1/data-import/migration-jobs/{job_id}/', { params: { path: { job_id: id } } })).state;

    const obtainedAt = Date.now();
    assert.equal(await look(), 'scheduled');
    // The service's tokens last an hour: 58 minutes on, the token is still used; a minute before its end, it is renewed.
    ctx.mock.timers.enable({ apis: ['Date'], now: obtainedAt + 58 * 60_000 });
    assert.equal(await look(), 'scheduled');
    ctx.mock.timers.setTime(obtainedAt + 59 * 60_000 + 1_000);
    assert.equal(await look(), 'scheduled');
    assert.deepEqual(seen, [
      'POST /graphql with APIKey: 200', 'GET the job: 200', 'GET the job: 200', 'POST /graphql with refreshToken: 200', 'GET the job: 200',
    ]);
  });

  test('a plain 500 (not only 502/503/504) to any call is retried, and the call then succeeds', async () => {
    // A proxy in front of the service that answers the first two looks at the job with a 500 page.
    const seen: string[] = [];
    let failing = 2;
    const target = new URL(server.url);
    const proxy = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const what = req.url === '/graphql' ? 'POST /graphql' : `${req.method} the job`;
        if (what === 'GET the job' && failing-- > 0) {
          seen.push(`${what}: 500`);
          return void res.writeHead(500, { 'content-type': 'text/html' }).end('<html>boom</html>');
        }
        httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
          seen.push(`${what}: ${answer.statusCode}`);
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        }).end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    after(() => new Promise((resolve) => proxy.close(resolve)));
    const id = await scheduledJob();
    const run = await inProcess(['status', id, '--json', '--url', `http://127.0.0.1:${(proxy.address() as { port: number }).port}`],
      { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_RETRY_DELAY_MS: '10' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).id, id);
    assert.deepEqual(seen, ['POST /graphql: 200', 'GET the job: 500', 'GET the job: 500', 'GET the job: 200']);
  });

  test('the service unreachable for good mid-upload: exit 2, after the command that resumes the upload', async () => {
    // A proxy in front of the service that cuts every records upload: the job is made, then its upload never gets through.
    const target = new URL(server.url);
    const proxy = createHttpServer((req, res) => {
      if (req.url?.includes('/records/')) return void req.socket.destroy();
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        httpRequest({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        }).end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    after(() => new Promise((resolve) => proxy.close(resolve)));
    const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    const { path } = await file('unreachable.ndjson', 2);
    const run = await inProcess(['run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--url', url],
      { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_RETRY_DELAY_MS: '10' });
    assert.equal(run.status, 2, run.stderr);
    const id = /created job (\S+) /.exec(run.stderr)?.[1];
    assert.ok(id, run.stderr);
    assert.ok(run.stderr.includes(`\nUpload stopped: job ${id} keeps the records the service received and stays open.\n`
      + `Resume with: import-migrate run ${path} --resume ${id} --url ${url}\n`), run.stderr);
    assert.match(run.stderr, new RegExp(`import-migrate: cannot reach the service at ${url}: \\S+\n$`));
  });

  test('IMPORT_URL is the default --url, and hints carry the --url to run them as printed', async () => {
    const id = made.mixedJob;
    const run = await inProcess(['watch', id], { IMPORT_API_KEY: tenant.apiKey, IMPORT_URL: server.url, IMPORT_MIGRATE_POLL_MS: '250' });
    assert.equal(run.status, 1, run.stderr);
    assert.ok(run.stdout.endsWith(`\nFailed records: import-migrate results ${id} --outcome failed --url ${server.url}\n`), run.stdout);
    // --url wins over IMPORT_URL.
    const port = await freePort();
    const refused = await inProcess(['status', id, '--url', `http://127.0.0.1:${port}`], { IMPORT_API_KEY: tenant.apiKey, IMPORT_URL: server.url });
    assert.equal(refused.status, 2);
  });

  test('without --url or IMPORT_URL the service is http://127.0.0.1:8000: unreachable there, exit 2', async (t) => {
    // Port 8000 is held here by a listener that drops each connection once the request arrives: the
    // service cannot be reached there whatever else runs on this machine, and the client's attempts
    // are seen arriving.
    const requests: string[] = [];
    const holder = createServer((socket) => socket.once('data', (head) => {
      requests.push(head.toString('latin1').split('\r\n')[0]!);
      socket.destroy();
    }));
    const held = await new Promise<boolean>((resolve) => {
      holder.once('error', () => resolve(false));
      holder.listen(8000, '127.0.0.1', () => resolve(true));
    });
    if (!held) {
      t.skip('something else listens on 127.0.0.1:8000');
      return;
    }
    try {
      const run = await inProcess(['status', '00000000-0000-4000-8000-000000000000'], { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_RETRY_DELAY_MS: '10' });
      assert.equal(run.status, 2, run.stderr);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, /^import-migrate: cannot reach the service at http:\/\/127\.0\.0\.1:8000: (UND_ERR_SOCKET|ECONNRESET|EPIPE)\n$/);
      assert.ok(requests.length > 0 && requests.every((line) => line === 'POST /graphql HTTP/1.1'), requests.join('\n'));
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  /** `run` of a 4,000-record file in a child process, sent SIGINT at its first upload progress line: exit 130. */
  async function interruptedUpload(name: string, progressMs: string) {
    const { path, lines } = await file(name, 4000);
    const child = spawn(process.execPath, ['bin/import-migrate.js', 'run', path, '--supplier', tenant.supplier, '--team', tenant.team,
      '--url', server.url], { cwd: ROOT, env: { ...process.env, IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_PROGRESS_MS: progressMs } });
    let stderr = '';
    let interrupted = false;
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (!interrupted && /\nuploading: /.test(stderr)) interrupted = child.kill('SIGINT');
    });
    const [status] = await once(child, 'exit');
    assert.equal(status, 130, stderr);
    return { path, lines, stderr, id: /^created job (\S+) /.exec(stderr)![1]! };
  }

  test('Ctrl-C during an upload: the count kept is the job\'s, and the resume hint runs as printed', async () => {
    const { path, lines, stderr, id } = await interruptedUpload('big.ndjson', '1');
    const kept = Number(/keeps the ([\d,]+) records received/.exec(stderr)?.[1]?.replace(/,/g, ''));
    const job = await request(server.url, 'GET', `${BASE}${id}/`, { token: await token() });
    assert.deepEqual([job.json.state, job.json.counts.total], ['open', kept], stderr);
    assert.ok(kept > 0 && kept < lines.length, `stopped mid-file: ${kept}`);
    assert.ok(stderr.endsWith(`and stays open.\nResume with: import-migrate run ${path} --resume ${id} --url ${server.url}\n`), stderr);
  });

  test('Ctrl-C during an upload off a terminal: the last progress line says the records sent, not the bytes read seconds before', async () => {
    // Progress lines far apart: the one line printed is the first read, long out of date at the stop.
    const { stderr, id } = await interruptedUpload('stopped.ndjson', '60000');
    const job = await request(server.url, 'GET', `${BASE}${id}/`, { token: await token() });
    const kept = job.json.counts.total as number;
    const progress = stderr.split('\n').filter((line) => /^(uploading|uploaded|upload stopped)/.test(line));
    assert.equal(progress.at(-1), `upload stopped: ${kept.toLocaleString('en-GB')} records sent`, stderr);
    assert.ok(stderr.includes(`\nupload stopped: ${kept.toLocaleString('en-GB')} records sent\n\nUpload interrupted: job ${id} keeps the `), stderr);
  });

  test('the summary tells failures before the account existed from failures in its history, in a pre-flight too', async () => {
    const path = join(dir, 'history.ndjson');
    const records = [
      migrationRecord(tenant.supplier, false),
      migrationRecord(tenant.supplier, true),
      { ...migrationRecord(tenant.supplier, false), notes: [{}] },
      'not json',
    ];
    writeFileSync(path, `${records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n')}\n`);
    // A pre-flight splits them as the real run does, though it keeps no account.
    for (const dryRun of [['--dry-run'], []]) {
      const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, ...dryRun);
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stdout, /\n {2}failed {5}3\n {13}2 {2}before the account existed \(the line, or the account step\)\n {13}1 {2}on an existing account/);
      const json = await migrateCli('status', /^Job (\S+) /.exec(run.stdout)![1]!, '--json');
      assert.equal(JSON.parse(json.stdout).counts.failed, 3);
    }
  });

  test('rates: a job of seconds says what it did in how long; a longer one, records a minute', () => {
    const job = (seconds: number, done: number): Job => ({
      id: 'J', import_supplier: 'S', operations_team_name: 'T', dry_run: false, on_drift: 'warn', state: 'completed', paused: false,
      max_records_per_minute: null, records_with_warnings: 0,
      not_before: null, not_after: null,
      created_at: '2026-01-01T00:00:00Z', started_at: '2026-01-01T00:00:00Z', finished_at: new Date(Date.parse('2026-01-01T00:00:00Z') + seconds * 1000).toISOString(),
      counts: { total: done, pending: 0, running: 0, succeeded: done, skipped: 0, failed: 0, cancelled: 0 },
      errors_by_code: [], records_per_minute: 106, eta_seconds: null,
    });
    assert.equal(pace(job(1, 53)), '53 records in 1 s');
    assert.equal(summary(job(1, 53), null).split('\n')[0], 'Job J completed in 1s');
    assert.equal(pace(job(120, 6000)), '3,000/min');
    assert.equal(summary(job(120, 6000), null).split('\n')[0], 'Job J completed in 2m 0s (3,000/min)');
  });
});

describe('import-migrate exit 2', () => {
  const usage = RUN_USAGE;
  const [book, notAnObject, notJson] = ['one.ndjson', 'list-totals.json', 'broken-totals.json'].map((name) => join(dir, name));
  writeFileSync(book!, '{}\n');
  writeFileSync(notAnObject!, '[{"accounts": 1}]');
  writeFileSync(notJson!, '{accounts: 1}');
  const running = ['run', book!, '--supplier', 'S', '--team', 'T'];
  for (const [args, reason] of [
    [[...running, '--control-totals', notAnObject!],
      `--control-totals ${notAnObject} must hold one JSON object, like {"accounts": 2000, "balance_total": "-1204.50"}; ${usage}`],
    [[...running, '--control-totals', notJson!],
      `--control-totals ${notJson} is not JSON: Expected property name or '}' in JSON at position 1; ${usage}`],
    [[...running, '--control-totals', join(dir, 'missing.json')], `cannot read ${join(dir, 'missing.json')}; ${usage}`],
    [['run', book!, '--resume', 'J', '--control-totals', notAnObject!], `--resume takes no --control-totals: the job has them; ${usage}`],
    [['bogus'], 'unknown command "bogus"; run import-migrate --help'],
    [[], 'no command given; run import-migrate --help'],
    [['run', 'x.ndjson', '--supplier', 'S'], `give --supplier and --team, or --resume JOB; ${usage}`],
    [['run', 'x.ndjson', '--resume', 'J', '--team', 'T'], `--resume takes no --team: the job has them; ${usage}`],
    [['status'], 'missing JOB; usage: import-migrate status JOB'],
    [['results', 'J', '--csv', '--json'], 'give --csv or --json, not both; usage: import-migrate results JOB [--outcome O] [--csv]'],
    [['status', 'J', '--outcome', 'failed'], '--outcome does not apply to status; usage: import-migrate status JOB'],
    [['status', 'J', '--frobnicate'], 'Unknown option \'--frobnicate\'; run import-migrate --help'],
    [['run', 'x.ndjson', '--supplier', 'S', '--team', 'T', '--max-rate', '0'], `--max-rate must be a whole number of records a minute from 1 to 1000000; ${usage}`],
    [['run', 'x.ndjson', '--resume', 'J', '--max-rate', '10'], `--resume takes no --max-rate: the job has them; ${usage}`],
    [['pause'], 'missing JOB; usage: import-migrate pause JOB'],
    [['reconcile', 'J', '--csv', join(dir, 'no-such-folder', 'x.csv')],
      `--csv ${join(dir, 'no-such-folder', 'x.csv')} cannot be written: no such file; usage: import-migrate reconcile JOB [--csv FILE]`],
    [['reconcile', 'J', '--csv', dir], `--csv ${dir} is a directory, not a file; usage: import-migrate reconcile JOB [--csv FILE]`],
  ] as Array<[string[], string]>) {
    test(`usage error: ${args.join(' ') || '(nothing)'}`, async () => {
      assert.deepEqual(await inProcess([...args, '--url', server.url]), { status: 2, stdout: '', stderr: `import-migrate: ${reason}\n` });
    });
  }

  test('run FILE that is a directory, a device, missing, blank or a broken gzip: exit 2 naming it, before the service is asked (no empty job left behind)', async () => {
    const asked: string[] = [];
    const url = await answering(500, 'text/html', '<html>boom</html>', asked);
    const folder = join(dir, 'a-folder');
    mkdirSync(folder, { recursive: true });
    const [blank, notGzip] = [join(dir, 'blank.ndjson'), join(dir, 'not-gzip.ndjson.gz')];
    writeFileSync(blank, '\n  \r\n\n');
    writeFileSync(notGzip, '{"account": {}}\n');
    for (const [path, reason] of [
      [folder, `${folder} is a directory, not a file`],
      ['/dev/null', '/dev/null is not a regular file (the upload reads it more than once)'],
      [join(dir, 'nowhere.ndjson'), `cannot read ${join(dir, 'nowhere.ndjson')}: no such file`],
      [blank, `${blank} holds no record: every line of it is blank`],
      [notGzip, `cannot read ${notGzip}: Z_DATA_ERROR`],
    ] as Array<[string, string]>) {
      assert.deepEqual(await inProcess(['run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--url', url]),
        { status: 2, stdout: '', stderr: `import-migrate: ${reason}; ${usage}\n` });
    }
    assert.deepEqual(asked, [], 'no job was made');
  });

  test('a file that cannot be read during the upload is said as the file\'s fault, not the service\'s', async () => {
    const folder = join(dir, 'read-fails');
    mkdirSync(folder, { recursive: true });
    const created = await request(server.url, 'POST', BASE, { token: await token(), body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const session = new ApiSession(server.url, tenant.apiKey, { attempts: 3, baseDelayMs: 10 });
    await assert.rejects(uploadRemaining(session, created.json.id, folder, () => {}, new AbortController().signal),
      { name: 'FileReadError', message: `cannot read ${folder}: it is a directory` });
  });

  test('a 5xx while obtaining a token is retried, then the service is unavailable (exit 2), not a bad key', async () => {
    const asked: string[] = [];
    const url = await answering(500, 'text/html', '<html>boom</html>', asked);
    const run = await inProcess(['status', 'J', '--url', url], { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_RETRY_DELAY_MS: '10' });
    assert.deepEqual(run, { status: 2, stdout: '', stderr: 'import-migrate: cannot obtain a token: Internal Server Error (error, HTTP 500)\n' });
    assert.deepEqual(asked, Array(5).fill('POST /graphql'));
  });

  test('an answer that is not the service\'s JSON (a web page at --url) asks whether --url is right (exit 2)', async () => {
    for (const [status, type] of [[200, 'text/html; charset=utf-8'], [404, 'text/html']] as const) {
      const asked: string[] = [];
      const url = await answering(status, type, '<html>a web site</html>', asked);
      const run = await inProcess(['status', 'J', '--url', url], { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_RETRY_DELAY_MS: '10' });
      assert.deepEqual(run, { status: 2, stdout: '',
        stderr: `import-migrate: ${url}/graphql answered HTTP ${status} with text/html, not the service's JSON: is --url right?\n` });
      assert.deepEqual(asked, ['POST /graphql']);
    }
  });

  test('no API key', async () => {
    assert.deepEqual(await inProcess(['status', 'J'], {}), {
      status: 2, stdout: '', stderr: 'import-migrate: give --api-key KEY or set IMPORT_API_KEY; usage: import-migrate status JOB\n',
    });
  });

  test('the bin exits 2 on a usage error', async () => {
    assert.deepEqual(await cli(['run']), { status: 2, stdout: '', stderr: `import-migrate: missing FILE; ${usage}\n` });
  });

  test('the service cannot be reached', async () => {
    const port = await freePort();
    const run = await cli(['status', 'J', '--url', `http://127.0.0.1:${port}`]);
    assert.deepEqual(run, { status: 2, stdout: '', stderr: `import-migrate: cannot reach the service at http://127.0.0.1:${port}: ECONNREFUSED\n` });
  });

  test('a server that accepts each connection and closes it at once cannot be reached: exit 2, every time', { timeout: 30_000 }, async () => {
    // Node 20's built-in fetch never settled here: the process then ended with exit 13 and said nothing.
    let connections = 0;
    const closer = createServer((socket) => { connections++; socket.destroy(); });
    await new Promise<void>((resolve) => closer.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closer.address() as { port: number }).port}`;
    try {
      for (let run = 0; run < 5; run++) {
        const result = await inProcess(['status', 'J', '--url', url], { IMPORT_API_KEY: tenant.apiKey, IMPORT_MIGRATE_RETRY_DELAY_MS: '10' });
        assert.equal(result.status, 2, result.stderr);
        assert.equal(result.stdout, '');
        assert.match(result.stderr, new RegExp(`^import-migrate: cannot reach the service at ${url}: (UND_ERR_SOCKET|ECONNRESET|EPIPE)\n$`));
      }
      assert.ok(connections >= 5 * 5, `the client tried each run five times: ${connections} connections`);
    } finally {
      await new Promise((resolve) => closer.close(resolve));
    }
  });

  test('a wrong API key is refused (exit 1)', async () => {
    const run = await cli(['status', 'J', '--url', server.url, '--api-key', 'ak_000000000000.nope']);
    assert.equal(run.status, 1);
    assert.match(run.stderr, /^import-migrate: cannot obtain a token: [^\n]+ \(authentication_failed, HTTP 200\)\n$/);
  });
});

/** Usage errors need no service and no spawn: the same entry point, called in this process. */
async function inProcess(args: string[], env: Record<string, string> = { IMPORT_API_KEY: tenant.apiKey }): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await runImportMigrate(args, {
    env, out: (text) => { stdout += text; }, err: (text) => { stderr += text; }, tty: null, stdout: process.stdout,
  });
  return { status, stdout, stderr };
}

/** A server answering every request with `status` and `body`, recording each request's method and path; its URL. */
async function answering(status: number, type: string, body: string, asked: string[]): Promise<string> {
  const fake = createHttpServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.writeHead(status, { 'content-type': type }).end(body));
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  after(() => new Promise((resolve) => fake.close(resolve)));
  return `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

// reconcile: its exit status is what a go-live script reads: 0 balanced, 1 differs or not finished
// (or refused), 2 usage or no service.
/** Runs a file of `lines` records (every third failing when `failing`) with the client; the job id. */
async function runBook(name: string, lines: number, failing: boolean): Promise<{ id: string; lines: string[] }> {
  const { path, lines: written } = await file(name, lines, failing);
  const run = await migrateCli('run', path, '--supplier', tenant.supplier, '--team', tenant.team, '--json');
  assert.equal(run.status, failing ? 1 : 0, run.stderr);
  return { id: JSON.parse(run.stdout).job.id as string, lines: written };
}

const HEADER = '  measure                 control  file  migrated  verdict';

describe('import-migrate reconcile', () => {
  test('a balanced job: the table, exit 0; --json is the report', async () => {
    const { id } = await runBook('reconcile-good.ndjson', 3, false);
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
    const { id, lines } = await runBook('reconcile-mixed.ndjson', 3, true);
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
    const job = await request(server.url, 'POST', BASE, {
      token: await token(), body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, control_totals: { accounts: 10 } },
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
