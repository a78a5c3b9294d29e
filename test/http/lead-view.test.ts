import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { extractText } from 'unpdf';
import { DASHBOARD_CSP } from '../../src/http/dashboard.ts';
import { launchBrowser, signInWith, watchProblems, type Browser } from '../support/browser.ts';
import { waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// The dashboard as the migration lead's view, in Debian's chromium (playwright-core): every job,
// finished ones included, paged newest first with its reconciliation verdict; a record a job rejected
// found by search; and a job's reconciliation report, printed to PDF with its verdict, hash and
// exceptions. UPDATE_SCREENSHOT=1 also writes the pictures of docs/dashboard.md (docs/images/).

const IMAGES = fileURLToPath(new URL('../../docs/images/', import.meta.url));
const t = await buildTestApp({ WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '1', JOB_RETRY_DELAY_SECONDS: '0' });
await t.app.listen({ host: '127.0.0.1', port: 0 });
const address = t.app.server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
const BASE = '/v1/data-import/migration-jobs/';
const shoot = async (page: Page, name: string) => {
  if (process.env.UPDATE_SCREENSHOT !== '1') return;
  await mkdir(IMAGES, { recursive: true });
  await page.screenshot({ path: `${IMAGES}${name}.png`, fullPage: true });
};

let browser: Browser;
before(async () => { browser = await launchBrowser(); });
after(async () => { await browser?.close(); });

const newJob = async (tenant: Tenant, body: Record<string, unknown> = {}) => {
  const res = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, ...body } });
  assert.equal(res.status, 201, res.body);
  return res.json.id as string;
};

/** A finished job of three accounts with the legacy count 3: one fails validation, so it reconciles `differs`. */
async function finishedJob(tenant: Tenant) {
  const [a, b, rejected] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
  rejected.customers[0]!.mobile = 'abc';
  const id = await newJob(tenant, { control_totals: { accounts: 3 } });
  const up = await t.app.inject({ method: 'POST', url: `${BASE}${id}/records/`, payload: [a, rejected, b].map((account) => JSON.stringify({ account })).join('\n'),
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
  assert.equal(up.statusCode, 200, up.body);
  assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
  await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', `job ${id} completed`, 60_000);
  return { id, rejected: rejected.external_account_number };
}

describe('the lead\'s view', () => {
  test('every job, finished ones included, paged newest first with its verdict; search finds a rejected record; the report prints to PDF', async () => {
    const tenant = await createTenant(t);
    const { id, rejected } = await finishedJob(tenant);
    // Ten newer jobs push the finished one to the second page.
    const newer: string[] = [];
    for (let i = 0; i < 10; i++) newer.unshift(await newJob(tenant));
    const reconciliation = (await call(t.app, 'GET', `${BASE}${id}/reconciliation/`, { token: tenant.token })).json;
    assert.equal(reconciliation.verdict, 'differs');
    const exceptions = (await t.app.inject({ method: 'GET', url: `${BASE}${id}/reconciliation/exceptions/`, headers: { authorization: `Token ${tenant.token}` } }))
      .body.split('\n').filter(Boolean).map((line) => JSON.parse(line));
    assert.deepEqual(exceptions, [{ line: 2, external_account_number: rejected, measure: 'not_migrated', file: null, migrated: null }]);

    const page = await browser.context.newPage();
    const problems = await watchProblems(page);
    try {
      await page.goto(`${base}/dashboard/`);
      await signInWith(page, tenant.apiKey);
      await page.getByTestId('job').nth(9).waitFor();
      assert.deepEqual(await page.getByTestId('job').evaluateAll((cards) => cards.map((c) => (c as any).dataset.jobId)), newer);
      assert.equal(await page.getByTestId('jobs-newer').isDisabled(), true);
      await page.getByTestId('jobs-older').click();
      const card = page.locator(`[data-testid=job][data-job-id="${id}"]`);
      await card.getByTestId('job-verdict').filter({ hasText: 'differs' }).waitFor();
      assert.equal(await page.getByTestId('job').count(), 1);
      assert.equal(await card.locator('.state').first().textContent(), 'completed');
      assert.equal(await card.getByTestId('job-report').getAttribute('href'), `/dashboard/jobs/${id}/report`);
      // The headline counts: the rejected record is among the failures, and the card says so.
      assert.deepEqual([await page.getByTestId('count-failed').textContent(), await page.getByTestId('count-rejected').textContent()], ['1', '1']);
      await shoot(page, 'dashboard-jobs');

      // Searched from the header, the rejected account is found where the job holds it, not as "no staged account".
      await page.getByTestId('search').fill(rejected);
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByTestId('account-not-staged').waitFor();
      const row = page.getByTestId('account').getByTestId('record');
      assert.equal(await row.count(), 1);
      assert.match((await row.innerText()).replace(/\s+/g, ' '), new RegExp(`^${id.slice(0, 8)} 2 ${rejected} failed account invalid_phone_number at account\\.customers\\.0\\.mobile`));

      // The job opened: its pace, and its records by outcome and error code.
      await card.getByTestId('job-open').click();
      const detail = page.getByTestId('job-detail');
      await detail.locator('[data-testid=rate-chart] canvas').waitFor();
      await detail.locator('select[name=outcome]').selectOption('failed');
      await detail.locator('input[name=error_code]').fill('invalid_phone_number');
      await detail.getByRole('button', { name: 'Search' }).click();
      await detail.getByTestId('record').first().waitFor();
      assert.deepEqual(await detail.getByTestId('record').evaluateAll((rows) => rows.map((r) => (r as any).cells[1].innerText)), [rejected]);
      await shoot(page, 'dashboard-job-records');

      // The report, from the job's link: what the reconciliation says, printed whole.
      await card.getByTestId('job-report').click();
      await page.waitForURL(`${base}/dashboard/jobs/${id}/report`);
      await page.getByTestId('exception').first().waitFor();
      assert.match(await page.getByTestId('verdict').innerText(), /^DIFFERS/);
      assert.equal(await page.getByTestId('sha256').innerText(), reconciliation.file.sha256);
      assert.equal(await page.getByTestId('uploaded-by').innerText(), `API key ${reconciliation.uploaded_by}`);
      assert.equal(await page.getByTestId('measure').count(), reconciliation.measures.length);
      assert.deepEqual(await page.getByTestId('measure').first().evaluate((r) => [...(r as any).cells].map((c: any) => c.innerText)), ['Accounts', '3', '3', '2', 'differs']);
      assert.equal(await page.getByTestId('exception').count(), 1);
      await shoot(page, 'reconciliation-report');

      const pdf = await page.pdf({ format: 'A4', printBackground: true, margin: { top: '15mm', bottom: '15mm', left: '12mm', right: '12mm' } });
      const { text, totalPages } = await extractText(new Uint8Array(pdf), { mergePages: true });
      // PDF text comes in runs: compare without the spaces and breaks between them.
      const flat = text.replace(/\s+/g, '');
      assert.ok(totalPages >= 1);
      for (const expected of ['DIFFERS', reconciliation.file.sha256, rejected, 'Notmigrated', `${reconciliation.uploaded_by}`, 'Reconciled']) {
        assert.ok(flat.includes(expected), `the PDF lacks ${expected}: ${text.slice(0, 2000)}`);
      }
      // Nothing cut off: laid out for print at the width of A4 within those margins (186 mm, 703 px), nothing is wider.
      await page.emulateMedia({ media: 'print' });
      await page.setViewportSize({ width: 703, height: 1000 });
      assert.deepEqual(await page.evaluate(() => [...(globalThis as any).document.querySelectorAll('main *')]
        .filter((e: any) => e.getBoundingClientRect().right > 703.5).map((e: any) => e.outerHTML.slice(0, 80))), []);
      assert.equal(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth), 703);
      // The only failed answers: the rejected account's import status and attempts, 404 because it was never staged.
      const notFound = 'Failed to load resource: the server responded with a status of 404 (Not Found)';
      assert.deepEqual((await problems()).sort(), [
        `404 ${base}/v1/data-import/account-transfer-status/${tenant.supplier}/${rejected}/`,
        `404 ${base}/v1/data-import/stats/${tenant.supplier}/attempts/${rejected}/`, notFound, notFound]);
    } finally {
      await page.close();
    }
  });

  test('search for an account number the service refuses as one (a job rejected it for that): its record is shown, not the refusal', async () => {
    const tenant = await createTenant(t);
    const ext = 'BAD/1';
    const id = await newJob(tenant);
    const up = await t.app.inject({ method: 'POST', url: `${BASE}${id}/records/`, payload: JSON.stringify({ account: { ...accountPayload(tenant.supplier), external_account_number: ext } }),
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
    assert.equal(up.statusCode, 200, up.body);
    assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
    await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed', `job ${id} completed`, 60_000);
    const page = await browser.context.newPage();
    try {
      await page.goto(`${base}/dashboard/`);
      await signInWith(page, tenant.apiKey);
      // The search looks in the jobs listed: wait for the job before searching.
      await page.locator(`[data-testid=job][data-job-id="${id}"]`).waitFor();
      await page.getByTestId('search').fill(ext);
      await page.getByRole('button', { name: 'Find' }).click();
      // The import status refuses the number (400 invalid): the job's record of it is what there is to show.
      await page.getByTestId('account-not-staged').waitFor();
      const row = page.getByTestId('account').getByTestId('record');
      assert.match((await row.innerText()).replace(/\s+/g, ' '), new RegExp(`^${id.slice(0, 8)} 1 BAD/1 failed account invalid at account\\.external_account_number`));
    } finally {
      await page.close();
    }
  });

  test('the report page carries the dashboard\'s headers and asks a visitor without a session to sign in', async () => {
    const tenant = await createTenant(t);
    const id = await newJob(tenant);
    const res = await fetch(`${base}/dashboard/jobs/${id}/report`);
    assert.equal(res.status, 200);
    assert.deepEqual(['content-type', 'content-security-policy', 'x-frame-options', 'x-content-type-options', 'referrer-policy'].map((h) => res.headers.get(h)),
      ['text/html; charset=utf-8', DASHBOARD_CSP, 'DENY', 'nosniff', 'no-referrer']);
    const page = await browser.context.newPage();
    const problems = await watchProblems(page);
    try {
      await page.goto(`${base}/dashboard/jobs/${id}/report`);
      await signInWith(page, tenant.apiKey);
      // An open job (nothing uploaded) is incomplete, with nothing to list.
      await page.getByTestId('verdict').filter({ hasText: 'INCOMPLETE' }).waitFor();
      await page.getByTestId('no-exceptions').waitFor();
      assert.deepEqual(await problems(), []);
    } finally {
      await page.close();
    }
  });
});
