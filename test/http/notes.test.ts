import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp();
const URL = '/v1/data-import/notes/create/';
const UTC_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

async function setup() {
  const tenant = await createTenant(t);
  const account = await insertImportedAccount(t, tenant);
  return { tenant, account };
}

function post(tenant: Tenant, external: string, notes: unknown[]) {
  return call(t.app, 'POST', URL, { token: tenant.token, body: { import_supplier: tenant.supplier, external_account_number: external, notes } });
}

function storedNotes(accountId: number) {
  return t.store.db.selectFrom('notes').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

const statuses = (res: { json: any }) => res.json.map((r: any) => r.status);

describe('POST notes/create/', () => {
  test('creates notes with bodies, documents and pins; created_at defaults to now in UTC', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [
      { body: 'Called the customer.' },
      { body: 'Meter photo attached', document_paths: [{ document_path: 'photos/meter.jpg' }], created_at: '2023-05-01T10:00:00Z', is_pinned: true, unpin_at: '2030-01-01T00:00:00Z' },
    ]);
    assert.equal(res.status, 201, res.body);
    assert.equal(res.json.length, 2);
    assert.match(res.json[0].created_at, UTC_SECONDS);
    assert.ok(Math.abs(Date.parse(res.json[0].created_at) - Date.now()) < 60_000);
    assert.deepEqual(res.json, [
      { created_at: res.json[0].created_at, body: 'Called the customer.', status: 'NOTE_CREATION_SUCCESS' },
      { created_at: '2023-05-01T10:00:00Z', body: 'Meter photo attached', status: 'NOTE_CREATION_SUCCESS' },
    ]);
    const rows = await storedNotes(account.accountId);
    assert.deepEqual(rows.map((r) => [r.body, r.document_paths, r.is_pinned, r.unpin_at && (r.unpin_at as Date).toISOString()]), [
      ['Called the customer.', [], false, null],
      ['Meter photo attached', ['photos/meter.jpg'], true, '2030-01-01T00:00:00.000Z'],
    ]);
  });

  test('dedupe without created_at: the same body is NOTE_ALREADY_EXISTS, also within one request', async () => {
    const { tenant, account } = await setup();
    const first = await post(tenant, account.externalAccountNumber, [{ body: 'Hello', created_at: '2022-01-01T00:00:00Z' }, { body: 'Hello' }]);
    assert.deepEqual(statuses(first), ['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS']);
    assert.equal(first.json[1].created_at, '2022-01-01T00:00:00Z');
    const again = await post(tenant, account.externalAccountNumber, [{ body: 'Hello' }, { body: 'Other' }, { body: 'Other' }]);
    assert.deepEqual(again.json, [
      { created_at: '2022-01-01T00:00:00Z', body: 'Hello', status: 'NOTE_ALREADY_EXISTS' },
      { created_at: again.json[1].created_at, body: 'Other', status: 'NOTE_CREATION_SUCCESS' },
      { created_at: again.json[1].created_at, body: 'Other', status: 'NOTE_ALREADY_EXISTS' },
    ]);
    assert.equal((await storedNotes(account.accountId)).length, 2);
  });

  test('dedupe with created_at: the same body at another time is a new note', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [
      { body: 'Visit', created_at: '2023-01-01T09:00:00Z' },
      { body: 'Visit', created_at: '2023-02-01T09:00:00Z' },
      { body: 'Visit', created_at: '2023-01-01T09:00:00Z' },
      { body: 'visit', created_at: '2023-01-01T09:00:00Z' },
    ]);
    assert.deepEqual(statuses(res), ['NOTE_CREATION_SUCCESS', 'NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS']);
    assert.equal((await storedNotes(account.accountId)).length, 3);
  });

  test('a note of documents only dedupes on its set of document paths', async () => {
    const { tenant, account } = await setup();
    const doc = (p: string) => ({ document_path: p });
    const res = await post(tenant, account.externalAccountNumber, [
      { document_paths: [doc('letters/a.pdf'), doc('letters/b.pdf')] },
      { document_paths: [doc('letters/b.pdf'), doc('letters/a.pdf')] },
      { document_paths: [doc('letters/a.pdf')] },
      { body: 'With a body', document_paths: [doc('letters/a.pdf')] },
    ]);
    assert.equal(res.status, 201);
    assert.deepEqual(res.json.map((r: any) => [r.body, r.status]), [
      [null, 'NOTE_CREATION_SUCCESS'], [null, 'NOTE_ALREADY_EXISTS'], [null, 'NOTE_CREATION_SUCCESS'], ['With a body', 'NOTE_CREATION_SUCCESS'],
    ]);
    assert.deepEqual((await storedNotes(account.accountId)).map((r) => r.document_paths),
      [['letters/a.pdf', 'letters/b.pdf'], ['letters/a.pdf'], ['letters/a.pdf']]);
  });

  test('validation: document paths, pin rule, body or documents, datetimes, unknown fields', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, account.externalAccountNumber, [
      { body: 'x', document_paths: [{ document_path: '/abs.pdf' }, { document_path: 'a/../b.pdf' }, { document_path: 'a//b.pdf' }, { document_path: 'a\\b.pdf' }] },
      { body: 'x', unpin_at: '2030-01-01T00:00:00Z' },
      { document_paths: [] },
      { body: 'x', created_at: '2023-01-01T10:00:00+01:00' },
      { body: 'x', colour: 'red' },
    ]);
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'invalid');
    assert.deepEqual(res.json.errors.map((e: any) => [e.attr, e.code]), [
      ['notes.0.document_paths.0.document_path', 'invalid_document_path'],
      ['notes.0.document_paths.1.document_path', 'invalid_document_path'],
      ['notes.0.document_paths.2.document_path', 'invalid_document_path'],
      ['notes.0.document_paths.3.document_path', 'invalid_document_path'],
      ['notes.1.unpin_at', 'invalid'],
      ['notes.2', 'required'],
      ['notes.3.created_at', 'invalid'],
      ['notes.4.colour', 'unknown_field'],
    ]);
    assert.equal((await storedNotes(account.accountId)).length, 0);
  });

  test('404 for an unknown or merely staged account; 400 for another organisation\'s supplier', async () => {
    const { tenant } = await setup();
    const detail = 'No imported account "NOPE" for this import supplier.';
    const missing = await post(tenant, 'NOPE', [{ body: 'x' }]);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json, { detail, code: 'account_not_found', errors: [{ detail, code: 'account_not_found', attr: 'external_account_number' }] });
    const staged = await post(tenant, await insertStagedOnly(t, tenant), [{ body: 'x' }]);
    assert.equal(staged.status, 404);
    assert.equal(staged.json.code, 'account_not_found');

    const other = await createTenant(t);
    const account = await insertImportedAccount(t, tenant);
    const foreign = await call(t.app, 'POST', URL, {
      token: other.token, body: { import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber, notes: [{ body: 'x' }] },
    });
    const supplierDetail = `No import supplier with code "${tenant.supplier}".`;
    assert.equal(foreign.status, 400);
    assert.deepEqual(foreign.json, { detail: supplierDetail, code: 'import_supplier_not_found', errors: [{ detail: supplierDetail, code: 'import_supplier_not_found', attr: 'import_supplier' }] });
    assert.equal((await storedNotes(account.accountId)).length, 0);
  });

  test('a paused supplier does not block notes (D6)', async () => {
    const { tenant, account } = await setup();
    await admin.setSupplier(t.store.db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    assert.equal((await post(tenant, account.externalAccountNumber, [{ body: 'x' }])).status, 201);
  });

  test('ten identical posts at once make one note', async () => {
    const { tenant, account } = await setup();
    const results = await Promise.all(Array.from({ length: 10 }, () => post(tenant, account.externalAccountNumber, [{ body: 'Same note' }])));
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(201));
    const created = results.filter((r) => r.json[0].status === 'NOTE_CREATION_SUCCESS');
    assert.equal(created.length, 1);
    assert.equal((await storedNotes(account.accountId)).length, 1);
  });
});
