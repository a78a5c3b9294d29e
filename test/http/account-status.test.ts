import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { accountLockKey } from '../../src/modules/account-imports/index.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { PG_ONLY, pgSession, processAccount, stage, waitUntil } from '../support/imports.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp();

const statusOf = (tenant: Tenant, ext: string, supplier = tenant.supplier) =>
  call(t.app, 'GET', `/v1/data-import/account-transfer-status/${encodeURIComponent(supplier)}/${encodeURIComponent(ext)}/`, { token: tenant.token });

const importIdOf = async (ext: string) =>
  (await t.store.db.selectFrom('account_imports').select('id').where('external_account_number', '=', ext).executeTakeFirstOrThrow()).id;

describe('GET account-transfer-status/<code>/<ext>/ (spec 4.8, D6)', () => {
  test('404 account_not_found alike for an unknown account, an unknown supplier and another organisation\'s (D3)', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const theirs = await stage(t, other);
    const cases: Array<[string, string]> = [
      [tenant.supplier, unique('EXT')],
      [unique('NOPE'), theirs.external_account_number],
      [other.supplier, theirs.external_account_number],
    ];
    for (const [supplier, ext] of cases) {
      const res = await statusOf(tenant, ext, supplier);
      assert.equal(res.status, 404);
      assert.deepEqual(res.json, { detail: `No import process for account "${ext}" of import supplier "${supplier}".`, code: 'account_not_found' });
    }
  });

  test('UNKNOWN once staged; last_error is the latest failed attempt; a dry run is no failure', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    assert.deepEqual((await statusOf(tenant, ext)).json, { status: 'UNKNOWN', service_account_number: '', last_error: null });

    const failed = await processAccount(t, tenant, ext, { operations_team_name: unique('no-team') });
    assert.equal(failed.json.code, 'operations_team_not_found');
    const dry = await processAccount(t, tenant, ext, { dry_run: true });
    assert.equal(dry.json.code, 'dry_run_rolled_back');
    const res = await statusOf(tenant, ext);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, {
      status: 'UNKNOWN', service_account_number: '', last_error: { code: 'operations_team_not_found', detail: failed.json.detail },
    });
  });

  test('COMPLETED with the account number once created; still readable when the supplier is paused', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const created = await processAccount(t, tenant, payload.external_account_number);
    assert.equal(created.status, 201);
    await admin.setSupplier(t.store.db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    assert.deepEqual((await statusOf(tenant, payload.external_account_number)).json, {
      status: 'COMPLETED', service_account_number: created.json.service_account_number, last_error: null,
    });
    const imported = await insertImportedAccount(t, tenant);
    assert.deepEqual((await statusOf(tenant, imported.externalAccountNumber)).json, {
      status: 'COMPLETED', service_account_number: imported.serviceAccountNumber, last_error: null,
    });
  });

  test('last_error only while not imported: a failure before the create, and a repeated create after it, are not shown', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    const failed = await processAccount(t, tenant, ext, { operations_team_name: unique('no-team') });
    assert.equal(failed.json.code, 'operations_team_not_found');
    const created = await processAccount(t, tenant, ext);
    assert.equal(created.status, 201);
    const again = await processAccount(t, tenant, ext);
    assert.equal(again.json.code, 'account_already_imported');
    assert.deepEqual((await statusOf(tenant, ext)).json, {
      status: 'COMPLETED', service_account_number: created.json.service_account_number, last_error: null,
    });
  });

  test('IN_PROGRESS while another session holds the account\'s create lock', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    const other = await pgSession(t.config.databaseUrl);
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1::int8)', [accountLockKey(await importIdOf(ext))]);
      assert.deepEqual((await statusOf(tenant, ext)).json, { status: 'IN_PROGRESS', service_account_number: '', last_error: null });
      const res = await processAccount(t, tenant, ext);
      assert.equal(res.status, 400);
      assert.deepEqual(res.json, {
        detail: res.json.detail, code: 'account_import_in_progress',
        errors: [{ detail: res.json.detail, code: 'account_import_in_progress', attr: 'external_account_number' }],
      });
      await other.query('ROLLBACK');
      assert.deepEqual((await statusOf(tenant, ext)).json, {
        status: 'UNKNOWN', service_account_number: '', last_error: { code: 'account_import_in_progress', detail: res.json.detail },
      });
    } finally {
      await other.end();
    }
  });

  test('IN_PROGRESS during a real create, COMPLETED after it', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    const other = await pgSession(t.config.databaseUrl);
    try {
      // Holding the staged row makes the create wait at its read of it (FOR UPDATE), under its account lock.
      await other.query('BEGIN');
      await other.query('SELECT id FROM account_imports WHERE external_account_number = $1 FOR UPDATE', [ext]);
      const creating = processAccount(t, tenant, ext);
      await waitUntil(async () => (await statusOf(tenant, ext)).json.status === 'IN_PROGRESS', 'the status shows the running create');
      await other.query('COMMIT');
      const created = await creating;
      assert.equal(created.status, 201);
      assert.deepEqual((await statusOf(tenant, ext)).json, { status: 'COMPLETED', service_account_number: created.json.service_account_number, last_error: null });
    } finally {
      await other.end();
    }
  });
});
