import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { isolatedDatabaseUrl } from '../support/imports.ts';
import { migrationRecord } from '../support/migration-file.ts';
import { request, startServer } from '../support/server-process.ts';
import { unique } from '../support/test-app.ts';
import { waitFor } from './integrity.ts';

// Lines the store cannot keep, in the middle of a migration file, through a cut upload and
// import-migrate's --resume: each such line is its own failed parse record, every good line is
// kept, and the resume goes past them. Was: the batch of 500 lines around such a line failed whole
// (a 500), and each resume hit the same line again, so the file could never be uploaded.
const url = process.env.DATABASE_URL;
const skip = url ? false : 'needs PostgreSQL: set DATABASE_URL';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const JOBS = '/v1/data-import/migration-jobs/';
const GOOD = 240;
const CUT_AFTER = 150; // complete lines sent before the connection is cut

describe('poison lines in a migration file', { skip }, () => {
  test('an upload cut after them, then import-migrate --resume: every good line a record, each poison line one failed parse record', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'poison-lines-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const databaseUrl = await isolatedDatabaseUrl();
    const tenant = { org: unique('org'), supplier: unique('SUP'), team: unique('team'), apiKey: '' };
    const store = await openStore({ databaseUrl, dataDir: '', poolSize: 1 });
    await migrate(store);
    tenant.apiKey = (await admin.createOrganisation(store.db, tenant.org)).api_key;
    await admin.createSupplier(store.db, tenant.supplier, tenant.org);
    await admin.createTeam(store.db, tenant.team);
    await store.close();
    const server = await startServer({ DATABASE_URL: databaseUrl, WORKER_CONCURRENCY: '4' }, 60_000);
    after(() => server.stop());

    const good = Array.from({ length: GOOD }, () => Buffer.from(JSON.stringify(migrationRecord(tenant.supplier, false))));
    const poison = [
      Buffer.from(good[0]!.toString().replace('"Alice"', '"Al\\ud800ice"').replace(/EXT-\w+/, 'EXT-SURROGATE')),
      Buffer.from(`{"account": {"external_account_number": "EXT-DEEP", "metadata": [{"key": "k", "value": ${'['.repeat(10_000)}${']'.repeat(10_000)}}]}}`),
      Buffer.concat([Buffer.from('{"account": {"external_account_number": "EXT-BYTES", "given_name": "'), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('"}}')]),
    ];
    const lines = [...good.slice(0, 100), ...poison, ...good.slice(100)];
    const poisonLines = [101, 102, 103];
    const path = join(dir, 'poison.ndjson');
    const whole = Buffer.concat(lines.flatMap((l) => [l, Buffer.from('\n')]));
    writeFileSync(path, whole);

    const auth = { authorization: `Token ${await token(server.url, tenant.apiKey)}` };
    const created = await request(server.url, 'POST', JOBS, { headers: auth, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    assert.equal(created.status, 201, created.text);
    const id = created.json.id as string;

    // The first upload: CUT_AFTER complete lines and half of the next, then the connection drops.
    const sent = Buffer.concat([...lines.slice(0, CUT_AFTER).flatMap((l) => [l, Buffer.from('\n')]), lines[CUT_AFTER]!.subarray(0, 100)]);
    await cutUpload(server.url, `${JOBS}${id}/records/`, auth.authorization, sent, whole.length);
    const job = async () => (await request(server.url, 'GET', `${JOBS}${id}/`, { headers: auth })).json;
    await waitFor('the cut upload\'s complete lines are kept', async () => (await job()).counts.total, (n) => n === CUT_AFTER, 30_000);

    const run = await cli(['run', path, '--resume', id, '--json', '--url', server.url], tenant.apiKey);
    assert.equal(run.status, 1, `exit 1: some records failed\n${run.stderr}`);
    const out = JSON.parse(run.stdout);
    assert.deepEqual(out.upload, { received: lines.length - CUT_AFTER, total_records: lines.length, skipped: CUT_AFTER });
    assert.deepEqual(out.job.counts, { total: lines.length, pending: 0, running: 0, succeeded: GOOD, skipped: 0, failed: 3, cancelled: 0 });

    const results = (await (await fetch(`${server.url}${JOBS}${id}/records/`, { headers: auth })).text()).trimEnd().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(results.map((r) => r.line), lines.map((_, i) => i + 1), 'every line once, in order');
    for (const r of results) {
      if (poisonLines.includes(r.line)) continue;
      assert.deepEqual([r.outcome, r.external_account_number], ['succeeded', JSON.parse(lines[r.line - 1]!.toString()).account.external_account_number], `line ${r.line}`);
    }
    assert.deepEqual(results.filter((r) => r.outcome !== 'succeeded').map((r) => [r.line, r.outcome, r.step, r.errors]), [
      [101, 'failed', 'parse', [{ code: 'invalid', attr: 'account.customers.0.given_name', detail: 'Text must not contain NUL characters or unpaired surrogates.' }]],
      [102, 'failed', 'parse', [{ code: 'parse_error', attr: 'non_field_errors', detail: 'The line is nested more than 64 levels deep.' }]],
      [103, 'failed', 'parse', [{ code: 'parse_error', attr: 'non_field_errors', detail: 'The line is not valid UTF-8.' }]],
    ]);
  });
});

async function token(base: string, apiKey: string): Promise<string> {
  const res = await request(base, 'POST', '/graphql', { body: { query: `mutation { obtainToken(input: {APIKey: "${apiKey}"}) { token } }` } });
  return res.json.data.obtainToken.token;
}

/** Sends `bytes` of a body announced as `length` bytes, then drops the connection. */
async function cutUpload(base: string, path: string, authorization: string, bytes: Buffer, length: number): Promise<void> {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${authorization}\r\n`
    + `Content-Type: application/x-ndjson\r\nContent-Length: ${length}\r\n\r\n`);
  await new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
  await new Promise((resolve) => setTimeout(resolve, 300));
  socket.destroy();
}

function cli(args: string[], apiKey: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/import-migrate.js', ...args], {
      cwd: ROOT, timeout: 240_000,
      env: { ...process.env, IMPORT_API_KEY: apiKey, IMPORT_MIGRATE_POLL_MS: '250', IMPORT_MIGRATE_PROGRESS_MS: '60000', IMPORT_MIGRATE_RETRY_DELAY_MS: '50' },
    }, (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
  });
}
