import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { BrowserContext, Page } from 'playwright-core';
import { DASHBOARD_CSP } from '../../src/http/dashboard.ts';
import { DOCS_CSP } from '../../src/http/openapi.ts';
import { launchBrowser, watchProblems, type Browser } from '../support/browser.ts';
import { holdCreate, processAccount, stage, stageAndCreate, supplierIdOf } from '../support/imports.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// The dashboard (D14) in a real browser: Debian's chromium driven by playwright-core, against the app
// listening on a real port. The page signs in with an API key, picks the supplier, and must show what
// the stats endpoint says. UPDATE_SCREENSHOT=1 also writes docs/dashboard.png (the README's picture).

const SHOTS = join(tmpdir(), 'dashboard-screenshots');
const DOCS_SHOT = fileURLToPath(new URL('../../docs/dashboard.png', import.meta.url));

const t = await buildTestApp();
const db = t.store.db;
await t.app.listen({ host: '127.0.0.1', port: 0 });
const address = t.app.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

let browser: Browser;
let context: BrowserContext;

before(async () => {
  await mkdir(SHOTS, { recursive: true });
  browser = await launchBrowser();
  context = browser.context;
});

after(async () => { await browser?.close(); });

/** A staged account whose create fails validation at `path` (its staged data broken behind the API's back). */
async function failingAccount(tenant: Tenant, path: string[], value: unknown): Promise<string> {
  const payload = await stage(t, tenant);
  const ext = payload.external_account_number;
  await sql`UPDATE account_imports SET data = jsonb_set(data, ${`{${path.join(',')}}`}::text[], ${JSON.stringify(value)}::jsonb)
    WHERE supplier_id = ${await supplierIdOf(t, tenant.supplier)} AND external_account_number = ${ext}`.execute(db);
  assert.equal((await processAccount(t, tenant, ext)).status, 400);
  return ext;
}

/** Accounts created in past hours (written straight to the store): the chart's history. */
async function history(tenant: Tenant, perHoursAgo: number[]) {
  const supplierId = await supplierIdOf(t, tenant.supplier);
  const teamId = (await db.selectFrom('operations_teams').select('id').where('name', '=', tenant.team).executeTakeFirstOrThrow()).id;
  for (const [ago, count] of perHoursAgo.entries()) {
    for (let i = 0; i < count; i++) {
      const ext = unique('HIST');
      const { rows } = await sql<{ id: number }>`INSERT INTO account_imports (supplier_id, external_account_number, data)
        VALUES (${supplierId}, ${ext}, '{}') RETURNING id`.execute(db);
      const { rows: account } = await sql<{ id: number }>`INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number,
          operations_team_id, billing_street_address, billing_country, billing_postal_code, created_at)
        VALUES (${`A-${ext.slice(-8).toUpperCase()}`}, ${rows[0]!.id}, ${supplierId}, ${ext}, ${teamId}, '1 Road', 'GB', 'BS1 5TY',
          now() - ${`${ago} hours ${i} minutes`}::interval) RETURNING id`.execute(db);
      await sql`UPDATE account_imports SET account_id = ${account[0]!.id} WHERE id = ${rows[0]!.id}`.execute(db);
    }
  }
}

/** A running migration job: 40 records uploaded, some finished in the last minutes (so it has a rate and an ETA). */
async function runningJob(tenant: Tenant): Promise<string> {
  const job = await call(t.app, 'POST', '/v1/data-import/migration-jobs/', { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  assert.equal(job.status, 201, job.body);
  const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ account: { external_account_number: `JOB-${i}`, import_supplier: tenant.supplier } }));
  const upload = await t.app.inject({
    method: 'POST', url: `/v1/data-import/migration-jobs/${job.json.id}/records/`,
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' }, payload: lines.join('\n'),
  });
  assert.equal(upload.statusCode, 200, upload.body);
  // The workers are not running in this test: the job's progress is written as a worker would leave it.
  await sql`UPDATE migration_jobs SET state = 'running', started_at = now() - interval '4 minutes' WHERE id = ${job.json.id}::uuid`.execute(db);
  await sql`UPDATE migration_job_records SET outcome = 'succeeded', finished_at = now() - interval '1 minute' WHERE job_id = ${job.json.id}::uuid AND line <= 14`.execute(db);
  await sql`UPDATE migration_job_records SET outcome = 'failed', step = 'account', finished_at = now() - interval '1 minute',
      errors = '[{"code": "invalid_phone_number", "attr": "account.customers.0.mobile", "detail": "Enter a valid phone number."}]'
    WHERE job_id = ${job.json.id}::uuid AND line BETWEEN 15 AND 17`.execute(db);
  await sql`UPDATE migration_job_records SET outcome = 'running' WHERE job_id = ${job.json.id}::uuid AND line BETWEEN 18 AND 19`.execute(db);
  return job.json.id as string;
}

async function text(page: Page, testId: string): Promise<string> {
  return (await page.getByTestId(testId).first().textContent())?.trim() ?? '';
}

describe('the dashboard page', () => {
  test('is served without a token, from the repository, with a strict Content-Security-Policy', async () => {
    const res = await fetch(`${base}/dashboard/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
    assert.match(DASHBOARD_CSP, /default-src 'none'; script-src 'self'; style-src 'self';/);
    assert.match(await res.text(), /<script type="module" src="app.js"><\/script>/);
    for (const path of ['app.js', 'api.js', 'jobs.js', 'signin.js', 'format.js', 'report.js', 'dashboard.css', 'vendor/preact.js', 'vendor/htm.js', 'vendor/uplot.js', 'vendor/uplot.css']) {
      assert.equal((await fetch(`${base}/dashboard/${path}`)).status, 200, path);
    }
    for (const path of ['/dashboard/nope.js', '/dashboard/..%2Fapp.ts', '/dashboard/vendor/../../package.json']) {
      const miss = await fetch(`${base}${path}`);
      assert.equal(miss.status, 404, path);
      assert.equal((await miss.json() as { code: string }).code, 'not_found', path);
    }
  });

  test('sign in, pick the supplier, see the stats endpoint\'s figures, follow an error example, search, refresh the token', async () => {
    const tenant = await createTenant(t);
    // A second supplier of another organisation must not be offered.
    const stranger = await createTenant(t);
    await history(tenant, [3, 5, 9, 12, 8, 6, 4, 7, 10, 11, 9, 5, 2, 0, 0, 1, 3, 6, 8, 5]);
    const { payload: created } = await stageAndCreate(t, tenant);
    await stage(t, tenant);
    const mobile = [await failingAccount(tenant, ['customers', '0', 'mobile'], '12'), await failingAccount(tenant, ['customers', '0', 'mobile'], 'abc')];
    const country = await failingAccount(tenant, ['billing_address', 'country'], 'ZZ');
    const inProgress = (await stage(t, tenant)).external_account_number;
    const release = await holdCreate(t, tenant.supplier, inProgress);
    const jobId = await runningJob(tenant);
    const requests: string[] = [];
    const problems: string[] = [];
    const page = await context.newPage();
    page.on('request', (request) => requests.push(request.url()));
    page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('response', (response) => { if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`); });
    try {
      await page.goto(`${base}/dashboard/`);
      await page.locator('input[name=apikey]').fill(tenant.apiKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const picker = page.getByTestId('supplier');
      // The picker can be on the page before its options (they come from a request of their own).
      await picker.locator('option').first().waitFor({ state: 'attached' });
      assert.deepEqual(await picker.locator('option').allTextContents(), [tenant.supplier]);
      await picker.selectOption(tenant.supplier);
      await page.getByTestId('job').waitFor();

      const stats = (await call(t.app, 'GET', `/v1/data-import/stats/${tenant.supplier}/`, { token: tenant.token })).json;
      // The job's three failed records (lines 15-17) were never staged: rejected, and counted with the failures.
      assert.deepEqual(stats.counts, { staged: 5, in_progress: 1, imported: 115, failed: 3, skipped: 0, rejected: 3 });
      for (const key of ['staged', 'in_progress', 'imported', 'skipped']) {
        assert.equal(await text(page, `count-${key}`), String(stats.counts[key]), key);
      }
      assert.deepEqual([await text(page, 'count-failed'), await text(page, 'count-failed-accounts'), await text(page, 'count-rejected')], ['6', '3', '3']);
      const groups = page.getByTestId('error-group');
      assert.equal(await groups.count(), 2);
      const cells = await groups.evaluateAll((rows) => rows.map((row) => [...(row as any).cells].map((cell: any) => String(cell.innerText).trim())));
      assert.deepEqual(cells, [
        ['invalid_phone_number', 'customers.0.mobile', '2', [...mobile].sort().join(' ')],
        ['invalid_country', 'billing_address.country', '1', country],
      ]);
      assert.equal(await page.locator('[data-testid=chart] canvas').count(), 1);
      const job = stats.jobs[0];
      assert.equal(job.id, jobId);
      assert.equal(job.state, 'running');
      assert.equal((await text(page, 'job-figures')).replace(/\s+/g, ' '),
        `17 / 40 (42.5%) · 14 succeeded · 3 failed · 2 running · ${job.records_per_minute}/min · ETA ${formatEta(job.eta_seconds)}`);
      await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });
      if (process.env.UPDATE_SCREENSHOT === '1') await page.screenshot({ path: DOCS_SHOT });

      // The job's card pauses and resumes it, with the signed-in key's token.
      const jobUrl = `/v1/data-import/migration-jobs/${jobId}/`;
      await page.getByTestId('job-pause').click();
      await page.getByTestId('job-resume').waitFor();
      assert.equal(await page.getByTestId('job').locator('.state').first().textContent(), 'paused');
      assert.deepEqual(await call(t.app, 'GET', jobUrl, { token: tenant.token }).then((r) => [r.json.state, r.json.paused]), ['paused', true]);
      await page.getByTestId('job-resume').click();
      await page.getByTestId('job-pause').waitFor();
      assert.deepEqual(await call(t.app, 'GET', jobUrl, { token: tenant.token }).then((r) => [r.json.state, r.json.paused]), ['running', false]);

      // An error example opens that account: its status, attempts and last error, as the API says.
      await page.getByTestId('example').filter({ hasText: country }).click();
      await page.getByTestId('account').waitFor();
      const status = (await call(t.app, 'GET', `/v1/data-import/account-transfer-status/${tenant.supplier}/${country}/`, { token: tenant.token })).json;
      assert.equal(await text(page, 'account-status'), 'UNKNOWN');
      assert.equal((await text(page, 'account-last-error')).replace(/\s+/g, ' '), `${status.last_error.code} ${status.last_error.detail}`);
      assert.equal(await page.getByTestId('attempt').count(), 1);
      assert.match(await page.getByTestId('attempt').first().textContent() ?? '', /failed.*account_failed_validation at billing_address\.country/);
      await page.screenshot({ path: join(SHOTS, 'account.png'), fullPage: true });

      // Search by external account number.
      await page.getByTestId('search').fill(created.external_account_number);
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByTestId('account-status').filter({ hasText: 'COMPLETED' }).waitFor();

      // It refreshes by itself: a new failure shows within a few seconds.
      await failingAccount(tenant, ['billing_address', 'country'], 'QQ');
      await page.getByTestId('count-failed').filter({ hasText: '7' }).waitFor({ timeout: 15_000 });

      // A token about to expire is refreshed with the refresh token before the next call.
      const stored = await page.evaluate(() => JSON.parse((globalThis as any).sessionStorage.getItem('migration-dashboard.session')!));
      await page.evaluate(() => {
        const session = JSON.parse((globalThis as any).sessionStorage.getItem('migration-dashboard.session')!);
        (globalThis as any).sessionStorage.setItem('migration-dashboard.session', JSON.stringify({ ...session, expiresAt: Date.now() + 10_000 }));
      });
      const refreshed = page.waitForRequest((request) => request.url().endsWith('/graphql') && /refreshToken/.test(request.postData() ?? ''));
      await refreshed;
      await page.waitForFunction((old) => JSON.parse((globalThis as any).sessionStorage.getItem('migration-dashboard.session')!).token !== old, stored.token);

      // No key or token in any URL; nothing fetched from anywhere but the service; no CSP violation.
      const token = (await page.evaluate(() => JSON.parse((globalThis as any).sessionStorage.getItem('migration-dashboard.session')!))).token as string;
      for (const url of requests) {
        assert.ok(url.startsWith(`${base}/`), `request left the service: ${url}`);
        for (const secret of [tenant.apiKey, token, stored.token, stored.refreshToken]) assert.ok(!url.includes(secret), `secret in ${url}`);
      }
      assert.deepEqual(problems, []);
      assert.ok(stranger.supplier);
    } finally {
      await page.close();
      await release();
    }
  });
});

describe('the API reference at /docs', () => {
  test('the page and its files carry the page headers: no framing, a Content-Security-Policy, nosniff', async () => {
    const pages = { '/docs/': DOCS_CSP, '/docs/static/swagger-ui-bundle.js': DOCS_CSP, '/docs/static/swagger-ui.css': DOCS_CSP,
      '/docs/static/swagger-initializer.js': DOCS_CSP, '/dashboard/': DASHBOARD_CSP, '/dashboard/app.js': DASHBOARD_CSP,
      '/dashboard/jobs/0b5cf3a5-59a5-4f83-9ef9-07d3b1f41a11/report': DASHBOARD_CSP };
    for (const [path, csp] of Object.entries(pages)) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 200, path);
      assert.deepEqual(['content-security-policy', 'x-frame-options', 'x-content-type-options', 'referrer-policy'].map((h) => res.headers.get(h)),
        [csp, 'DENY', 'nosniff', 'no-referrer'], path);
    }
    assert.match(DOCS_CSP, /frame-ancestors 'none'/);
    assert.doesNotMatch(DOCS_CSP, /script-src[^;]*'unsafe-(inline|eval)'/, 'no inline script or eval');
  });

  test('renders in the browser under its policy: every operation listed, one opened, no CSP violation or error', async () => {
    const page = await context.newPage();
    const problems = await watchProblems(page);
    try {
      await page.goto(`${base}/docs/`);
      const doc = (await call(t.app, 'GET', '/openapi.json')).json;
      const operations = Object.values<Record<string, unknown>>(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
      await page.locator('.opblock').nth(operations - 1).waitFor();
      assert.equal(await page.locator('.opblock').count(), operations);
      await page.locator('.opblock-summary').first().click();
      await page.locator('.opblock-body .responses-table').first().waitFor();
      await page.getByRole('button', { name: 'Authorize' }).click();
      await page.locator('.modal-ux').waitFor();
      assert.deepEqual(await problems(), []);
    } finally {
      await page.close();
    }
  });
});

function formatEta(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  return m < 60 ? `${m}m ${seconds % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}
