import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { STAGE_URL, stage, supplierIdOf } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique } from '../support/test-app.ts';

const t = await buildTestApp();

async function stagedRow(supplierCode: string, ext: string) {
  const supplierId = await supplierIdOf(t, supplierCode);
  return t.store.db.selectFrom('account_imports').selectAll()
    .where('supplier_id', '=', supplierId).where('external_account_number', '=', ext).executeTakeFirst();
}

describe('POST account-import-process/create-or-update/ (spec 4.2, D6)', () => {
  test('201 on first staging, 200 on re-stage: the data is replaced, staged_at kept, updated_at moved', async () => {
    const tenant = await createTenant(t);
    const payload = accountPayload(tenant.supplier);
    const first = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
    assert.equal(first.status, 201);
    assert.deepEqual(first.json, { import_supplier: tenant.supplier, external_account_number: payload.external_account_number });
    const before = await stagedRow(tenant.supplier, payload.external_account_number);
    assert.deepEqual(before?.data, payload);

    const changed = { ...payload, unknown_occupier: true };
    const second = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: changed });
    assert.equal(second.status, 200);
    assert.deepEqual(second.json, { import_supplier: tenant.supplier, external_account_number: payload.external_account_number });
    const after = await stagedRow(tenant.supplier, payload.external_account_number);
    assert.equal(after?.id, before?.id);
    assert.deepEqual(after?.data, changed);
    assert.equal(after?.staged_at.getTime(), before?.staged_at.getTime());
    assert.ok(after!.updated_at.getTime() > before!.updated_at.getTime());
  });

  test('concurrent stages of one account make one row: one 201, the rest 200', async () => {
    const tenant = await createTenant(t);
    const payload = accountPayload(tenant.supplier);
    const results = await Promise.all(Array.from({ length: 8 }, () =>
      call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload })));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
    const rows = await t.store.db.selectFrom('account_imports').select('id')
      .where('external_account_number', '=', payload.external_account_number).execute();
    assert.equal(rows.length, 1);
  });

  test('an imported account is refused with its service account number', async () => {
    const tenant = await createTenant(t);
    const imported = await insertImportedAccount(t, tenant);
    const payload = accountPayload(tenant.supplier, { external_account_number: imported.externalAccountNumber });
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: `Account "${imported.externalAccountNumber}" is already imported as ${imported.serviceAccountNumber}.`,
      code: 'account_already_imported',
      errors: [{ detail: res.json.detail, code: 'account_already_imported', attr: 'external_account_number' }],
      external_account_number: imported.externalAccountNumber,
      service_account_number: imported.serviceAccountNumber,
    });
    const row = await stagedRow(tenant.supplier, imported.externalAccountNumber);
    assert.deepEqual(row?.data, {}, 'the staged data of an imported account is left alone');
  });

  test('an account marked to skip is refused', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    await admin.skipAccount(t.store.db, tenant.supplier, payload.external_account_number);
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'account_marked_to_skip');
    assert.deepEqual(res.json.errors, [{ detail: res.json.detail, code: 'account_marked_to_skip', attr: 'external_account_number' }]);
  });

  for (const status of ['paused', 'complete'] as const) {
    test(`a ${status} supplier takes no staging`, async () => {
      const tenant = await createTenant(t, { status });
      const payload = accountPayload(tenant.supplier);
      const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
      assert.equal(res.status, 400);
      const detail = `Import supplier "${tenant.supplier}" is ${status}.`;
      assert.deepEqual(res.json, {
        detail, code: `import_supplier_${status}`, errors: [{ detail, code: `import_supplier_${status}`, attr: 'import_supplier' }],
      });
      assert.equal(await stagedRow(tenant.supplier, payload.external_account_number), undefined);
    });
  }

  test('an unknown supplier and another organisation\'s answer alike (D3)', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const unknownCode = unique('NOPE');
    for (const code of [unknownCode, other.supplier]) {
      const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: accountPayload(code) });
      assert.equal(res.status, 400);
      const detail = `No import supplier with code "${code}".`;
      assert.deepEqual(res.json, {
        detail, code: 'import_supplier_not_found', errors: [{ detail, code: 'import_supplier_not_found', attr: 'import_supplier' }],
      });
    }
    const rows = await t.store.db.selectFrom('account_imports').select('id')
      .where('supplier_id', '=', await supplierIdOf(t, other.supplier)).execute();
    assert.equal(rows.length, 0);
  });

  test('an invalid payload fails as account data, with every error, and stores nothing', async () => {
    const tenant = await createTenant(t);
    const payload = accountPayload(tenant.supplier);
    payload.customers[0]!.mobile = '12';
    (payload.billing_address as { country: string }).country = 'XX';
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'account_failed_validation');
    assert.deepEqual(res.json.errors.map((e: { code: string; attr: string }) => [e.code, e.attr]), [
      ['invalid_country', 'billing_address.country'],
      ['invalid_phone_number', 'customers.0.mobile'],
    ]);
    assert.equal(await stagedRow(tenant.supplier, payload.external_account_number), undefined);
  });

  test('body validation comes before the supplier check (D4)', async () => {
    const tenant = await createTenant(t);
    const payload = { ...accountPayload(unique('NOPE')), surprise: 1 };
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: payload });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'account_failed_validation');
    assert.deepEqual(res.json.errors.map((e: { code: string; attr: string }) => [e.code, e.attr]), [['unknown_field', 'surprise']]);
  });
});
