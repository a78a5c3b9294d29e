import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

// Debian's chromium driven by playwright-core, for the tests of the pages the service serves (the
// dashboard, the report, /docs): one headless browser with a profile of its own per test file.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const BROWSER_TIMEOUT = 30_000;

export interface Browser { context: BrowserContext; close(): Promise<void> }

export async function launchBrowser(): Promise<Browser> {
  // Fail, never skip: a machine without the browser must not pass the browser tests silently.
  assert.ok(existsSync(CHROMIUM), `chromium not found at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH)`);
  const profile = await mkdtemp(join(tmpdir(), 'dashboard-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    timeout: BROWSER_TIMEOUT,
  });
  context.setDefaultTimeout(BROWSER_TIMEOUT);
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Collects what must not happen on a page: console errors, uncaught errors, failed answers, CSP violations. */
export async function watchProblems(page: Page): Promise<() => Promise<string[]>> {
  const problems: string[] = [];
  await page.addInitScript(() => {
    (globalThis as any).violations = [];
    (globalThis as any).document.addEventListener('securitypolicyviolation',
      (e: any) => (globalThis as any).violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('response', (response) => { if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`); });
  return async () => [...problems, ...await page.evaluate(() => (globalThis as any).violations as string[]).catch(() => [])];
}

/** Signs the page in on the dashboard's form with an API key. */
export async function signInWith(page: Page, apiKey: string): Promise<void> {
  await page.locator('input[name=apikey]').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
