import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { stageAndCreate, waitUntil } from '../support/imports.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';
import type { AccountData } from '../../src/modules/account-data/index.ts';

// Drift: a migration-job record naming an account that is already imported is compared with what
// was stored; each difference is an account_differs warning on its result (on_drift warn, the
// default), or fails the record at step account (on_drift fail).

const t = await buildTestApp({ WORKER_CONCURRENCY: '2' });
const BASE = '/v1/data-import/migration-jobs/';
const POINT = 'account.supply_addresses.0.supply_points.0.identifier';

async function runJob(tenant: Tenant, records: object[], extra: Record<string, unknown> = {}) {
  const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, ...extra } });
  assert.equal(created.status, 201, created.body);
  const id: string = created.json.id;
  const uploaded = await t.app.inject({
    method: 'POST', url: `${BASE}${id}/records/`, payload: records.map((r) => JSON.stringify(r)).join('\n'),
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
  });
  assert.equal(uploaded.statusCode, 200, uploaded.body);
  assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
  const job = async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json;
  await waitUntil(async () => (await job()).state === 'completed', `job ${id} completed`, 60_000);
  const results = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: { authorization: `Token ${tenant.token}` } });
  const csv = await t.app.inject({ method: 'GET', url: `${BASE}${id}/records/`, headers: { authorization: `Token ${tenant.token}`, accept: 'text/csv' } });
  return { job: await job(), results: results.body.split('\n').filter(Boolean).map((l) => JSON.parse(l)), csv: csv.body.trimEnd().split('\r\n') };
}

/** An imported account, and the same data with its meter point, first email and billing street changed. */
async function importedAndChanged(tenant: Tenant) {
  const { payload, number } = await stageAndCreate(t, tenant);
  const changed: AccountData = structuredClone(payload);
  const point = changed.supply_addresses[0]!.supply_points[0]! as { identifier: string };
  point.identifier = `${point.identifier}9`;
  changed.customers[0]!.email = 'someone.else@example.com';
  changed.billing_address.street_address = '99 Other Street';
  return { payload, changed, number };
}

/**
 * An imported account, and the same data with 23 of its stored fields changed: the billing address,
 * both customers, both supply addresses and their meter points. DRIFT_SHOWN: the first 20, in the
 * order they are compared (each address, then its points).
 */
async function importedAndChangedEverywhere(tenant: Tenant) {
  const { payload, number } = await stageAndCreate(t, tenant);
  const changed: AccountData = structuredClone(payload);
  Object.assign(changed.billing_address, { street_address: '1 New Street', locality: 'Leeds', administrative_area: 'West Yorkshire', postal_code: 'LS1 4AP' });
  changed.customers.forEach((customer, i) => {
    Object.assign(customer, { given_name: `Given${i}`, family_name: `Family${i}`, mobile: `+44791112345${7 + i}`, landline: `020 7123 456${i}` });
  });
  changed.customers[0]!.email = 'someone.else@example.com';
  changed.supply_addresses.forEach((address, i) => {
    Object.assign(address, { supply_address1: `${i} New Road`, supply_address2: 'Headingley', supply_address3: 'Leeds', supply_postcode: 'LS6 3AA' });
    for (const point of address.supply_points) if (point.supply_type === 'ELECTRICITY') point.identifier = `${point.identifier}9`;
  });
  return { changed, number };
}
const DRIFT_SHOWN = [
  'billing_address.street_address', 'billing_address.locality', 'billing_address.administrative_area', 'billing_address.postal_code',
  ...['given_name', 'family_name', 'email', 'mobile', 'landline'].map((f) => `customers.0.${f}`),
  ...['given_name', 'family_name', 'mobile', 'landline'].map((f) => `customers.1.${f}`),
  ...['supply_address1', 'supply_address2', 'supply_address3', 'supply_postcode'].map((f) => `supply_addresses.0.${f}`),
  'supply_addresses.0.supply_points.0.identifier',
  ...['supply_address1', 'supply_address2'].map((f) => `supply_addresses.1.${f}`),
].map((attr) => `account.${attr}`);

describe('drift of an already imported account', () => {
  test('on_drift warn: each changed field is a warning with its attr, stored and sent values; the record succeeds', async () => {
    const tenant = await createTenant(t);
    const { payload, changed, number } = await importedAndChanged(tenant);
    // The same data with its postcode written differently is no drift: it is compared normalised.
    const same = await stageAndCreate(t, tenant);
    const sameSent = structuredClone(same.payload);
    sameSent.billing_address.postal_code = sameSent.billing_address.postal_code.toLowerCase().replace(' ', '');

    const { job, results, csv } = await runJob(tenant, [{ account: changed }, { account: sameSent }]);
    assert.equal(job.on_drift, 'warn');
    assert.equal(job.records_with_warnings, 1);
    assert.equal(job.counts.succeeded, 2);
    const [drifted, unchanged] = results;
    assert.equal(drifted.outcome, 'succeeded');
    assert.equal(drifted.created, false);
    assert.equal(drifted.service_account_number, number);
    const sentPoint = (changed.supply_addresses[0]!.supply_points[0] as { identifier: string }).identifier;
    const storedPoint = (payload.supply_addresses[0]!.supply_points[0] as { identifier: string }).identifier;
    assert.deepEqual(drifted.warnings.map((w: any) => [w.code, w.attr, w.stored, w.sent]), [
      ['account_differs', 'account.billing_address.street_address', payload.billing_address.street_address, '99 Other Street'],
      ['account_differs', 'account.customers.0.email', payload.customers[0]!.email, 'someone.else@example.com'],
      ['account_differs', POINT, storedPoint, sentPoint],
    ]);
    assert.equal(drifted.warnings[2].detail,
      `Account "${changed.external_account_number}" is already imported with "${storedPoint}" here; this record sends "${sentPoint}". The stored account is kept as it is.`);
    assert.deepEqual(unchanged.warnings, []);
    assert.equal(unchanged.outcome, 'succeeded');

    assert.equal(csv[0], 'line,external_account_number,outcome,step,service_account_number,error_code,error_attr,error_detail,error_count,warning_count,first_warning_code');
    assert.equal(csv[1], `1,${changed.external_account_number},succeeded,,${number},,,,0,3,account_differs`);
    assert.equal(csv[2], `2,${same.payload.external_account_number},succeeded,,${same.number},,,,0,0,`);

    // The stored account was kept as it was.
    const read = await call(t.app, 'GET', `/v1/data-import/accounts/${tenant.supplier}/${payload.external_account_number}/`, { token: tenant.token });
    assert.equal(read.json.billing_address.street_address, payload.billing_address.street_address);
  });

  test('on_drift fail: the record fails at step account with account_differs, one error a difference', async () => {
    const tenant = await createTenant(t);
    const { changed, number } = await importedAndChanged(tenant);
    const { job, results } = await runJob(tenant, [{ account: changed }], { on_drift: 'fail' });
    assert.equal(job.on_drift, 'fail');
    assert.equal(job.counts.failed, 1);
    assert.equal(job.records_with_warnings, 0);
    assert.deepEqual(job.errors_by_code, [{ code: 'account_differs', count: 1 }]);
    const [record] = results;
    assert.equal(record.outcome, 'failed');
    assert.equal(record.step, 'account');
    assert.equal(record.service_account_number, number);
    assert.deepEqual(record.errors.map((e: any) => [e.code, e.attr]), [
      ['account_differs', 'account.billing_address.street_address'], ['account_differs', 'account.customers.0.email'], ['account_differs', POINT],
    ]);
    assert.deepEqual(record.warnings, []);
  });

  test('every field the service keeps is compared: metadata, a customer\'s other fields, a point\'s own fields, agreements, meters, registers, readings', async () => {
    const tenant = await createTenant(t);
    const { payload, number } = await stageAndCreate(t, tenant);
    const changed: any = structuredClone(payload);
    changed.metadata[1].value.days = 30;
    const customer = changed.customers[0];
    customer.alternative_phone_numbers[0].phone_number = '+441174960999';
    customer.date_of_birth = '1980-04-13';
    customer.customer_preferences.opted_into_offers = true;
    const [point, heater] = changed.supply_addresses[0].supply_points;
    point.location_description = 'Hall cupboard';
    point.agreements[1].tariff_code = 'FIX-24M-2024';
    point.meters[0].serial_number = `${point.meters[0].serial_number}X`;
    point.meters[0].meter_type.model = 'E470-2';
    point.meters[0].registers[1].multiplier = 2;
    point.transfer_readings[0].value = '18234.8';
    heater.tank_configuration = 'Horizontal, cellar';
    const at = 'account.supply_addresses.0.supply_points';
    const was: any = payload;
    const expected = [
      ['account.metadata.1.value.days', 14, 30],
      ['account.customers.0.alternative_phone_numbers.0.phone_number', was.customers[0].alternative_phone_numbers[0].phone_number, '+441174960999'],
      ['account.customers.0.date_of_birth', '1980-04-12', '1980-04-13'],
      ['account.customers.0.customer_preferences.opted_into_offers', false, true],
      [`${at}.0.location_description`, 'Cupboard under the stairs', 'Hall cupboard'],
      [`${at}.0.agreements.1.tariff_code`, 'FIX-12M-2024', 'FIX-24M-2024'],
      [`${at}.0.meters.0.serial_number`, was.supply_addresses[0].supply_points[0].meters[0].serial_number, point.meters[0].serial_number],
      [`${at}.0.meters.0.meter_type.model`, 'E470', 'E470-2'],
      [`${at}.0.meters.0.registers.1.multiplier`, 1.5, 2],
      [`${at}.0.transfer_readings.0.value`, 18234.7, 18234.8],
      [`${at}.1.tank_configuration`, 'Vertical, loft', 'Horizontal, cellar'],
    ];
    const warned = await runJob(tenant, [{ account: changed }]);
    assert.equal(warned.results[0].outcome, 'succeeded');
    assert.equal(warned.results[0].service_account_number, number);
    assert.deepEqual(warned.results[0].warnings.map((w: any) => [w.attr, w.stored, w.sent]), expected);
    const failed = await runJob(tenant, [{ account: changed }], { on_drift: 'fail' });
    assert.equal(failed.results[0].outcome, 'failed');
    assert.deepEqual(failed.results[0].errors.map((e: any) => e.attr), expected.map(([attr]) => attr));

    // One agreement fewer, one reading more: the lists' lengths.
    const lists: any = structuredClone(payload);
    lists.supply_addresses[0].supply_points[0].agreements.pop();
    lists.supply_addresses[0].supply_points[0].transfer_readings.push({ register_type: 'KWH_IMPORT', read_date: '2024-04-30', value: '18300' });
    const { results } = await runJob(tenant, [{ account: lists }]);
    assert.deepEqual(results[0].warnings.map((w: any) => [w.attr, w.stored, w.sent]), [
      [`${at}.0.agreements.length`, 2, 1], [`${at}.0.transfer_readings.length`, 2, 3],
    ]);
  });

  test('on_drift warn: more than 20 differences give the first 20 warnings, in the order compared', async () => {
    const tenant = await createTenant(t);
    const { changed, number } = await importedAndChangedEverywhere(tenant);
    const { job, results, csv } = await runJob(tenant, [{ account: changed }]);
    assert.equal(job.records_with_warnings, 1);
    const [record] = results;
    assert.equal(record.outcome, 'succeeded', JSON.stringify(record));
    assert.equal(record.service_account_number, number);
    assert.equal(record.warnings.length, 20);
    // The later differences (the second address's third line and postcode, its meter point) are not listed.
    assert.deepEqual(record.warnings.map((w: any) => w.attr), DRIFT_SHOWN);
    assert.ok(record.warnings.every((w: any) => w.code === 'account_differs'));
    assert.equal(csv[1], `1,${changed.external_account_number},succeeded,,${number},,,,0,20,account_differs`);
  });

  test('on_drift fail: more than 20 differences fail the record with the first 20 as account_differs errors', async () => {
    const tenant = await createTenant(t);
    const { changed, number } = await importedAndChangedEverywhere(tenant);
    const { job, results } = await runJob(tenant, [{ account: changed }], { on_drift: 'fail' });
    assert.equal(job.counts.failed, 1);
    const [record] = results;
    assert.equal(record.outcome, 'failed');
    assert.equal(record.step, 'account');
    assert.equal(record.service_account_number, number);
    assert.equal(record.errors.length, 20);
    assert.deepEqual(record.errors.map((e: any) => [e.code, e.attr]), DRIFT_SHOWN.map((attr) => ['account_differs', attr]));
    assert.deepEqual(record.warnings, []);
  });

  test('a new account has no warnings, and on_drift must be warn or fail', async () => {
    const tenant = await createTenant(t);
    const refused = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, on_drift: 'ignore' } });
    assert.equal(refused.status, 400, refused.body);
    assert.deepEqual(refused.json.errors.map((e: any) => [e.code, e.attr]), [['invalid_choice', 'on_drift']]);
    const { payload } = await stageAndCreate(t, tenant);
    const fresh = structuredClone(payload);
    fresh.external_account_number = `${payload.external_account_number}-new`;
    for (const address of fresh.supply_addresses) {
      for (const point of address.supply_points) if (point.supply_type === 'ELECTRICITY') point.identifier = `${point.identifier}N`;
    }
    const { job, results } = await runJob(tenant, [{ account: fresh }]);
    assert.equal(results[0].outcome, 'succeeded', JSON.stringify(results[0]));
    assert.equal(results[0].created, true);
    assert.deepEqual(results[0].warnings, []);
    assert.equal(job.records_with_warnings, 0);
  });
});
