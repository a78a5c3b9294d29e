import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { isolatedDatabaseUrl } from '../support/imports.ts';
import { request, startServer } from '../support/server-process.ts';
import { accountPayload } from '../faults/fixtures.ts';
import { openHarness, tenantOf, waitFor } from '../faults/integrity.ts';

// `npm run worker` (D11): the workers of `npm start` without HTTP. Here the only workers on the
// database are those of the worker process: the server serves HTTP with WORKER_CONCURRENCY=0, so a
// job that completes was run by the worker process.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const JOBS = '/v1/data-import/migration-jobs/';

function startWorker(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker.ts'], {
    cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  return { child, output: () => output, exited };
}

describe('npm run worker', () => {
  test('without DATABASE_URL it refuses with one line and exit 1 (the embedded store is the server\'s)', async () => {
    const worker = startWorker({ DATABASE_URL: '' });
    const [code] = await worker.exited;
    assert.equal(code, 1);
    assert.equal(worker.output(), 'cannot start: npm run worker needs DATABASE_URL (the embedded store belongs to the server process)\n');
  });

  test('runs a job\'s records with no HTTP server of its own, and stops cleanly on SIGTERM; the server with WORKER_CONCURRENCY=0 runs none', { skip: process.env.DATABASE_URL ? false : 'needs PostgreSQL: set DATABASE_URL' }, async () => {
    const url = await isolatedDatabaseUrl();
    const server = await startServer({ DATABASE_URL: url, WORKER_CONCURRENCY: '0', OUTBOX_INTERVAL_MS: '0' }, 60_000);
    const harness = await openHarness(url);
    let worker: ReturnType<typeof startWorker> | undefined;
    try {
      const tenant = await tenantOf(harness);
      const created = await request(server.url, 'POST', JOBS, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
      assert.equal(created.status, 201, created.text);
      const id = created.json.id as string;
      const lines = [0, 1, 2].map(() => JSON.stringify({ account: accountPayload(tenant.supplier) })).join('\n');
      const uploaded = await fetch(`${server.url}${JOBS}${id}/records/`, {
        method: 'POST', body: lines, headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
      });
      assert.deepEqual(await uploaded.json(), { received: 3, total_records: 3 });
      assert.equal((await request(server.url, 'POST', `${JOBS}${id}/start/`, { token: tenant.token })).status, 200);
      // The server alone only serves HTTP: its started job waits, not one record run (a worker takes
      // a record within a second of the start).
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const waiting = (await request(server.url, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json;
      assert.deepEqual([waiting.state, waiting.counts.pending], ['queued', 3]);
      worker = startWorker({ DATABASE_URL: url, WORKER_CONCURRENCY: '2' });

      const job = await waitFor('the job completes', async () => (await request(server.url, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json,
        (j) => j?.state === 'completed', 60_000);
      assert.deepEqual(job.counts, { total: 3, pending: 0, running: 0, succeeded: 3, skipped: 0, failed: 0, cancelled: 0 });
      assert.match(worker.output(), /"msg":"workers started"/);
      assert.doesNotMatch(worker.output(), /listening/i, 'the worker process serves no HTTP');
    } finally {
      worker?.child.kill('SIGTERM');
      const [code] = worker ? await worker.exited : [0];
      await server.stop();
      await harness.close();
      assert.equal(code, 0);
      if (worker) assert.match(worker.output(), /"msg":"workers stopped"/);
    }
  });
});
