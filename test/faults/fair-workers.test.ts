import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { startFakeVendor } from '../support/fake-vendor.ts';
import { waitUntil } from '../support/imports.ts';
import { JOBS, startJob as startJobOf } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// One organisation's vendor that never answers must slow only that organisation's jobs: the
// workers of an instance are shared out between organisations (queue/shared-work.ts). On
// PostgreSQL with DATABASE_URL (a database of its own), else on PGlite.
const WORKERS = 8;
const t = await buildTestApp({ WORKER_CONCURRENCY: String(WORKERS), JOB_RETRY_LIMIT: '0' });
const vendor = await startFakeVendor();

const startJob = (tenant: Tenant, records: object[]) => startJobOf(t, tenant, records);

const jobOf = async (tenant: Tenant, id: string) => (await call(t.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json;

test('a vendor that never answers holds its own organisation\'s workers only: another organisation\'s small job finishes within seconds', async () => {
  const hanging = unique('HANG');
  await admin.createVendor(t.store.db, hanging, { kind: 'http', url: vendor.url, timeoutMs: 20_000 });
  const a = await createTenant(t);
  const b = await createTenant(t);
  const references = Array.from({ length: 64 }, (_, i) => `${hanging}-${i}`);
  for (const reference of references) vendor.set(reference, 'hang');
  const aJob = await startJob(a, references.map((reference) => ({
    account: accountPayload(a.supplier), payment_instruction: { vendor: hanging, reference, type: 'CARD' },
  })));
  // A's records are at the vendor, which does not answer: as many workers as A may take are held.
  const atVendor = () => new Set(vendor.requests.map((r) => r.reference)).size;
  await waitUntil(async () => atVendor() >= WORKERS - 1, 'organisation A\'s records wait on its vendor', 60_000);

  const started = Date.now();
  const bJob = await startJob(b, Array.from({ length: 5 }, () => ({ account: accountPayload(b.supplier) })));
  await waitUntil(async () => (await jobOf(b, bJob)).state === 'completed', 'organisation B\'s job completes', 15_000);
  const took = Date.now() - started;

  const bDone = await jobOf(b, bJob);
  assert.deepEqual(bDone.counts, { total: 5, pending: 0, running: 0, succeeded: 5, skipped: 0, failed: 0, cancelled: 0 });
  const aNow = await jobOf(a, aJob);
  assert.equal(aNow.state, 'running', 'A\'s job was still stuck on its vendor');
  assert.ok(atVendor() <= WORKERS, `A never held more than the instance's ${WORKERS} workers (${atVendor()} at its vendor)`);
  assert.ok(took < 15_000, `B's job took ${took} ms`);
  // Ends A's job without waiting out its vendor: records not started are cancelled.
  assert.equal((await call(t.app, 'POST', `${JOBS}${aJob}/cancel/`, { token: a.token })).status, 200);
});
