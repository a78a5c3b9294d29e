import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount, plantConflictOnce } from '../support/accounts.ts';
import { PROCESS_URL, processAccount, stage, stageAndCreate, supplierIdOf } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique } from '../support/test-app.ts';

const t = await buildTestApp();
const db = t.store.db;

async function accountOf(supplierCode: string, ext: string) {
  return db.selectFrom('accounts').selectAll()
    .where('supplier_id', '=', await supplierIdOf(t, supplierCode)).where('external_account_number', '=', ext)
    .executeTakeFirst();
}

async function attemptsOf(supplierCode: string, ext: string) {
  return db.selectFrom('create_attempts').select(['dry_run', 'outcome', 'error_code', 'error_detail'])
    .where('supplier_id', '=', await supplierIdOf(t, supplierCode)).where('external_account_number', '=', ext)
    .orderBy('id').execute();
}

/** The body of a refusal with one field error whose detail is the top-level one. */
const fieldError = (code: string, attr: string, detail: string) => ({ detail, code, errors: [{ detail, code, attr }] });

describe('POST account-import-process/process/: the account and its rows (spec 4.3, D6)', () => {
  test('201 with a new account number; every part of the payload becomes rows of its own', async () => {
    const tenant = await createTenant(t);
    const { payload, number } = await stageAndCreate(t, tenant);
    assert.match(number, /^A-[0-9A-Z]{8}$/);

    const account = await accountOf(tenant.supplier, payload.external_account_number);
    assert.ok(account);
    assert.equal(account.number, number);
    const team = await db.selectFrom('operations_teams').select('id').where('name', '=', tenant.team).executeTakeFirstOrThrow();
    assert.equal(account.operations_team_id, team.id);
    assert.equal(account.billing_street_address, 'Flat 2\n14 Harbour Road');
    assert.equal(account.billing_country, 'GB');
    assert.equal(account.unknown_occupier, false);
    assert.deepEqual(account.metadata, payload.metadata);
    const imported = await db.selectFrom('account_imports').select('account_id').where('id', '=', account.account_import_id).executeTakeFirstOrThrow();
    assert.equal(imported.account_id, account.id);

    const customers = await db.selectFrom('customers').selectAll().where('account_id', '=', account.id).orderBy('position').execute();
    assert.deepEqual(customers.map((c) => [c.given_name, c.email, c.mobile, c.date_of_birth, c.opted_into_sms]), [
      ['Alice', payload.customers[0]!.email, payload.customers[0]!.mobile, '1980-04-12', true],
      ['Bob', '', null, null, false],
    ]);
    assert.deepEqual(customers[0]!.alternative_phone_numbers, payload.customers[0]!.alternative_phone_numbers);

    const addresses = await db.selectFrom('supply_addresses').selectAll().where('account_id', '=', account.id).orderBy('position').execute();
    assert.deepEqual(addresses.map((a) => [a.supply_address1, a.supply_postcode, a.customer_at_supply_address_from_date]),
      [['Flat 2', 'BS1 5TY', '2019-06-01'], ['Unit 7', 'BS2 0QP', null]]);

    const points = await db.selectFrom('supply_points').selectAll().where('account_id', '=', account.id)
      .orderBy('supply_address_id').orderBy('position').execute();
    const expected = payload.supply_addresses.flatMap((a) => a.supply_points);
    assert.deepEqual(points.map((p) => p.supply_type), expected.map((p) => p.supply_type));
    assert.deepEqual(points.map((p) => p.identifier), expected.map((p) => (p.supply_type === 'ELECTRICITY' ? p.identifier : null)));
    // Each kind's own fields are kept in details; the common ones are columns or rows of their own.
    const ownRows = new Set(['supply_type', 'supply_start_date', 'last_billed_to_date', 'agreements', 'identifier', 'meters', 'transfer_readings']);
    assert.deepEqual(points.map((p) => p.details),
      expected.map((p) => Object.fromEntries(Object.entries(p).filter(([k]) => !ownRows.has(k)))));
    assert.deepEqual(points[0]!.details, {
      initial_connection_date: '2001-02-15', location_description: 'Cupboard under the stairs', book_number: 'BK-118',
      call_number: 42, energization_status: 'ENERGIZED',
    });
    assert.equal((points[4]!.details as { secondary_serial_number: null }).secondary_serial_number, null);
    assert.deepEqual(points.map((p) => [p.supply_start_date, p.last_billed_to_date]),
      expected.map((p) => [p.supply_start_date, p.last_billed_to_date ?? null]));

    const pointIds = points.map((p) => p.id);
    const agreements = await db.selectFrom('agreements').selectAll().where('supply_point_id', 'in', pointIds).orderBy('id').execute();
    assert.deepEqual(agreements.map((a) => [pointIds.indexOf(a.supply_point_id), a.tariff_code, a.effective_from]), [
      [0, 'STD-VAR-2023', '2023-04-01'], [0, 'FIX-12M-2024', '2024-04-01'], [1, 'WH-RENT', '2019-06-01'],
    ]);
    const meters = await db.selectFrom('meters').selectAll().where('supply_point_id', 'in', pointIds).orderBy('id').execute();
    assert.deepEqual(meters.map((m) => [pointIds.indexOf(m.supply_point_id), m.serial_number, m.status]), [
      [0, `${(expected[0] as { meters: Array<{ serial_number: string }> }).meters[0]!.serial_number}`, 'ACTIVE'],
      [2, `${(expected[2] as { meters: Array<{ serial_number: string }> }).meters[0]!.serial_number}`, 'INACTIVE'],
    ]);
    assert.equal((meters[0]!.meter_type as { manufacturer: string }).manufacturer, 'Landis+Gyr');
    const registers = await db.selectFrom('registers').selectAll().where('meter_id', 'in', meters.map((m) => m.id)).orderBy('id').execute();
    assert.deepEqual(registers.map((r) => [meters.findIndex((m) => m.id === r.meter_id), r.register_type, r.whole_digits, r.multiplier]), [
      [0, 'KWH_IMPORT', 6, '1'], [0, 'KW_IMPORT', 4, '1.5'], [1, 'KWH_EXPORT', null, null],
    ]);
    const readings = await db.selectFrom('transfer_readings').selectAll().where('supply_point_id', 'in', pointIds).orderBy('position').execute();
    assert.deepEqual(readings.map((r) => [r.register_type, r.read_date, r.value]), [['KWH_IMPORT', '2024-03-31', '18234.7'], ['KW_IMPORT', '2024-03-31', '6.25']]);

    const notes = await db.selectFrom('notes').selectAll().where('account_id', '=', account.id).orderBy('id').execute();
    assert.deepEqual(notes.map((n) => [n.body, n.is_pinned, n.document_paths]), [
      ['Customer prefers contact by email.', false, []],
      ['Payment plan agreed until June.', true, []],
      [null, false, [payload.notes![2]!.document_paths![0]!.document_path]],
    ]);
    assert.equal(notes[1]!.created_at.toISOString(), '2024-02-01T14:00:00.000Z');
    assert.ok(Math.abs(notes[2]!.created_at.getTime() - account.created_at.getTime()) < 60_000, 'a note without created_at gets now');

    assert.deepEqual(await attemptsOf(tenant.supplier, payload.external_account_number),
      [{ dry_run: false, outcome: 'created', error_code: null, error_detail: null }]);
  });

  test('dry run: 400 dry_run_rolled_back, nothing left behind, recorded; a real create follows', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    const payload = await stage(t, tenant);
    const ext = payload.external_account_number;
    const res = await processAccount(t, tenant, ext, { dry_run: true });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { detail: `Account "${ext}" would import successfully; it was rolled back due to the dry run.`, code: 'dry_run_rolled_back' });
    assert.equal(await accountOf(tenant.supplier, ext), undefined);
    const identifiers = payload.supply_addresses.flatMap((a) => a.supply_points.flatMap((p) => (p.supply_type === 'ELECTRICITY' ? [p.identifier] : [])));
    assert.equal((await db.selectFrom('supply_points').select('id').where('identifier', 'in', identifiers).execute()).length, 0);
    assert.equal((await db.selectFrom('customers').select('id').where('email', '=', payload.customers[0]!.email!).execute()).length, 0);
    assert.equal((await db.selectFrom('account_imports').select('account_id').where('external_account_number', '=', ext).executeTakeFirstOrThrow()).account_id, null);
    const emails = await db.selectFrom('outbox_emails').select('id').where('recipient', '=', payload.customers[0]!.email!).execute();
    assert.equal(emails.length, 0);
    assert.deepEqual(await attemptsOf(tenant.supplier, ext),
      [{ dry_run: true, outcome: 'dry_run_rolled_back', error_code: 'dry_run_rolled_back', error_detail: res.json.detail }]);

    const real = await processAccount(t, tenant, ext);
    assert.equal(real.status, 201);
  });
});

describe('POST account-import-process/process/: refusals, in the order of D4', () => {
  test('the body is strict: unknown fields and missing ones, top-level code invalid', async () => {
    const tenant = await createTenant(t);
    const res = await call(t.app, 'POST', PROCESS_URL, { token: tenant.token, body: { import_supplier_code: tenant.supplier, dry_run: 'yes', extra: 1 } });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'invalid');
    assert.deepEqual(res.json.errors.map((e: { code: string; attr: string }) => [e.code, e.attr]).sort(), [
      ['invalid', 'dry_run'], ['required', 'external_account_number'], ['required', 'operations_team_name'], ['unknown_field', 'extra'],
    ]);
  });

  test('unknown and foreign suppliers alike: import_supplier_not_found at import_supplier_code', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const payload = await stage(t, other);
    for (const code of [unique('NOPE'), other.supplier]) {
      const res = await processAccount(t, tenant, payload.external_account_number, { import_supplier_code: code });
      assert.equal(res.status, 400);
      assert.deepEqual(res.json, fieldError('import_supplier_not_found', 'import_supplier_code', `No import supplier with code "${code}".`));
    }
  });

  for (const status of ['paused', 'complete'] as const) {
    test(`a ${status} supplier creates nothing`, async () => {
      const tenant = await createTenant(t);
      const payload = await stage(t, tenant);
      await admin.setSupplier(db, tenant.supplier, { status });
      await t.directory.sync();
      const res = await processAccount(t, tenant, payload.external_account_number, { operations_team_name: unique('no-team') });
      assert.equal(res.status, 400);
      assert.deepEqual(res.json, fieldError(`import_supplier_${status}`, 'import_supplier_code', `Import supplier "${tenant.supplier}" is ${status}.`));
      assert.equal(await accountOf(tenant.supplier, payload.external_account_number), undefined);
    });
  }

  test('not staged: account_not_staged (before the team is looked at)', async () => {
    const tenant = await createTenant(t);
    const ext = unique('EXT');
    const res = await processAccount(t, tenant, ext, { operations_team_name: unique('no-team') });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, fieldError('account_not_staged', 'external_account_number',
      `No staged data for account "${ext}"; stage it with create-or-update first.`));
  });

  test('already imported: account_already_imported with both account numbers', async () => {
    const tenant = await createTenant(t);
    const imported = await insertImportedAccount(t, tenant);
    const res = await processAccount(t, tenant, imported.externalAccountNumber);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      ...fieldError('account_already_imported', 'external_account_number',
        `Account "${imported.externalAccountNumber}" is already imported as ${imported.serviceAccountNumber}.`),
      external_account_number: imported.externalAccountNumber,
      service_account_number: imported.serviceAccountNumber,
    });
  });

  test('marked to skip: account_marked_to_skip', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    await admin.skipAccount(db, tenant.supplier, payload.external_account_number);
    const res = await processAccount(t, tenant, payload.external_account_number);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, fieldError('account_marked_to_skip', 'external_account_number',
      `Account "${payload.external_account_number}" is marked to be skipped and cannot be staged or created.`));
  });

  test('an imported account cannot be marked to skip: conflict, naming its number, and its staged data is left unmarked', async () => {
    const tenant = await createTenant(t);
    const { payload, number } = await stageAndCreate(t, tenant);
    await assert.rejects(admin.skipAccount(db, tenant.supplier, payload.external_account_number), {
      code: 'conflict', message: `account "${payload.external_account_number}" is already imported as ${number}: it cannot be skipped`,
    });
    const row = await db.selectFrom('account_imports').select('skipped').where('external_account_number', '=', payload.external_account_number).executeTakeFirstOrThrow();
    assert.equal(row.skipped, false);
    await assert.rejects(admin.skipAccount(db, tenant.supplier, unique('EXT')), { code: 'not_found' });
  });

  test('unknown team: operations_team_not_found at operations_team_name; recorded as a failed attempt', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const team = unique('no-team');
    const res = await processAccount(t, tenant, payload.external_account_number, { operations_team_name: team });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, fieldError('operations_team_not_found', 'operations_team_name', `No operations team named "${team}".`));
    assert.deepEqual(await attemptsOf(tenant.supplier, payload.external_account_number),
      [{ dry_run: false, outcome: 'failed', error_code: 'operations_team_not_found', error_detail: `No operations team named "${team}".` }]);
  });

  test('a team created after a create named it in vain is found by the next create (no name is remembered as missing)', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const team = unique('later-team');
    const before = await processAccount(t, tenant, payload.external_account_number, { operations_team_name: team });
    assert.equal(before.json.code, 'operations_team_not_found');
    await admin.createTeam(db, team);
    const after = await processAccount(t, tenant, payload.external_account_number, { operations_team_name: team });
    assert.equal(after.status, 201, JSON.stringify(after.json));
    const account = await accountOf(tenant.supplier, payload.external_account_number);
    const made = await db.selectFrom('operations_teams').select('id').where('name', '=', team).executeTakeFirstOrThrow();
    assert.equal(account?.operations_team_id, made.id);
  });

  test('staged data that no longer passes: account_failed_validation with its errors', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const broken = structuredClone(payload);
    broken.customers[1]!.landline = 'not a number';
    broken.supply_addresses[0]!.supply_points[0]!.supply_start_date = '2023-02-30';
    await db.updateTable('account_imports').set({ data: JSON.stringify(broken) })
      .where('external_account_number', '=', payload.external_account_number).execute();
    const res = await processAccount(t, tenant, payload.external_account_number);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: 'The account data failed validation.', code: 'account_failed_validation', errors: [
        { detail: 'Enter a valid phone number: international with a leading +, or national in the billing address\'s country.',
          code: 'invalid_phone_number', attr: 'customers.1.landline' },
        { detail: 'Date has wrong format or is not a real date. Use YYYY-MM-DD.', code: 'invalid', attr: 'supply_addresses.0.supply_points.0.supply_start_date' },
      ],
    });
    assert.equal(await accountOf(tenant.supplier, payload.external_account_number), undefined);
  });

  test('an electricity identifier live on another account: supply_point_already_registered at that identifier', async () => {
    const tenant = await createTenant(t);
    const { payload: first } = await stageAndCreate(t, tenant);
    const second = accountPayload(tenant.supplier);
    const taken = first.supply_addresses[1]!.supply_points[0]!;
    const point = second.supply_addresses[1]!.supply_points[0]!;
    assert.ok(taken.supply_type === 'ELECTRICITY' && point.supply_type === 'ELECTRICITY');
    point.identifier = taken.identifier;
    await stage(t, tenant, second);
    const res = await processAccount(t, tenant, second.external_account_number);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, fieldError('supply_point_already_registered', 'supply_addresses.1.supply_points.0.identifier',
      `Supply point identifier "${taken.identifier}" is already registered on another account.`));
    assert.equal(await accountOf(tenant.supplier, second.external_account_number), undefined);
  });
});

describe('POST account-import-process/process/: rolled back by the database to settle a conflict', () => {
  for (const [code, what] of [['40P01', 'a deadlock'], ['40001', 'a serialization failure']] as const) {
    test(`${what} (${code}): 503 service_unavailable with Retry-After, nothing written; the same request then creates the account`, async () => {
      const tenant = await createTenant(t);
      const payload = await stage(t, tenant, accountPayload(tenant.supplier, { external_account_number: unique('CONFLICT') }));
      const ext = payload.external_account_number;
      const planted = await plantConflictOnce(db, ext, code);
      try {
        const refused = await processAccount(t, tenant, ext);
        assert.equal(refused.status, 503, refused.body);
        assert.equal(refused.json.code, 'service_unavailable');
        assert.match(refused.json.detail, /conflicted with other work/);
        assert.equal(refused.headers['retry-after'], '1');
        assert.equal(await accountOf(tenant.supplier, ext), undefined, 'nothing written');
        const again = await processAccount(t, tenant, ext);
        assert.equal(again.status, 201, again.body);
        assert.equal((await accountOf(tenant.supplier, ext))?.number, again.json.service_account_number);
      } finally {
        await planted.remove();
      }
    });
  }

  test('a statement stopped at its time limit (57014): 503 service_unavailable with Retry-After 10, nothing written; the same request then creates the account', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant, accountPayload(tenant.supplier, { external_account_number: unique('TIMEOUT') }));
    const ext = payload.external_account_number;
    const planted = await plantConflictOnce(db, ext, '57014');
    try {
      const refused = await processAccount(t, tenant, ext);
      assert.equal(refused.status, 503, refused.body);
      assert.deepEqual([refused.json.code, refused.headers['retry-after']], ['service_unavailable', '10']);
      assert.match(refused.json.detail, /stopped this at its time limit/);
      assert.equal(await accountOf(tenant.supplier, ext), undefined, 'nothing written');
      assert.equal((await processAccount(t, tenant, ext)).status, 201);
    } finally {
      await planted.remove();
    }
  });
});
