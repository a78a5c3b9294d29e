import pg from 'pg';
import type { AccountData } from '../../src/modules/account-data/account-data.schemas.ts';
import { findSupplierByCode } from '../../src/modules/admin/admin.repository.ts';
import { accountPayload } from './payloads.ts';
import { call, type Tenant, type TestApp } from './test-app.ts';

// Staging and creating through the HTTP endpoints, and a second PostgreSQL session for tests that
// hold locks "from another instance".

export const STAGE_URL = '/v1/data-import/account-import-process/create-or-update/';
export const PROCESS_URL = '/v1/data-import/account-import-process/process/';

export async function stage(t: TestApp, tenant: Tenant, payload: AccountData = accountPayload(tenant.supplier)) {
  const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
  if (res.status !== 201 && res.status !== 200) throw new Error(`staging failed: ${res.status} ${res.body}`);
  return payload;
}

export function processAccount(
  t: TestApp, tenant: Tenant, ext: string, extra: { dry_run?: boolean; operations_team_name?: string; import_supplier_code?: string } = {},
) {
  return call(t.app, 'POST', PROCESS_URL, {
    token: tenant.token,
    body: { external_account_number: ext, import_supplier_code: tenant.supplier, operations_team_name: tenant.team, ...extra },
  });
}

/** Stages a fresh payload and creates its account; returns the payload and the account number. */
export async function stageAndCreate(t: TestApp, tenant: Tenant, payload?: AccountData) {
  const staged = await stage(t, tenant, payload);
  const res = await processAccount(t, tenant, staged.external_account_number);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.body}`);
  return { payload: staged, number: res.json.service_account_number as string };
}

export async function supplierIdOf(t: TestApp, code: string): Promise<number> {
  const supplier = await findSupplierByCode(t.store.db, code);
  if (!supplier) throw new Error(`no supplier ${code}`);
  return supplier.id;
}

export const onPostgres = Boolean(process.env.DATABASE_URL);
export const PG_ONLY = onPostgres ? false : 'locks between sessions need PostgreSQL: PGlite has one session (set DATABASE_URL)';

/** A session of its own on the test PostgreSQL, closed by the caller. */
export async function pgSession(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  client.on('error', () => {}); // a terminated session must not crash the test process
  await client.connect();
  return client;
}
