import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { accountPayload } from '../support/payloads.ts';
import { STAGE_URL, stageAndCreate } from '../support/imports.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// Postcodes: a GB postcode must be a valid UK postcode and is stored normalised; another country's
// is checked against its format. Over validate-account, staging and the created account.

const t = await buildTestApp();
const tenant = await createTenant(t);
const VALIDATE_URL = '/v1/data-import/validate-account/';

const withPostcodes = (billing: string, supply: string, country = 'GB') => {
  const payload = accountPayload(tenant.supplier);
  payload.billing_address.country = country;
  payload.billing_address.postal_code = billing;
  for (const address of payload.supply_addresses) address.supply_postcode = supply;
  // Its national landline is read in the billing country: make it international.
  for (const customer of payload.customers) if (customer.landline) customer.landline = '+44 20 7946 0018';
  return payload;
};
const errorsOf = (res: { json: any }) => res.json.errors;

describe('postcodes', () => {
  test('a GB postcode that is not a UK postcode is invalid_postcode, at the billing and at the supply address', async () => {
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withPostcodes('not a postcode', 'PC1') });
    assert.equal(res.status, 400, res.body);
    assert.deepEqual(res.json, {
      detail: 'The account data failed validation.', code: 'account_failed_validation',
      errors: [
        { detail: '"not a postcode" is not a valid UK postcode (for example SW1A 1AA).', code: 'invalid_postcode', attr: 'billing_address.postal_code' },
        { detail: '"PC1" is not a valid UK postcode (for example SW1A 1AA).', code: 'invalid_postcode', attr: 'supply_addresses.0.supply_postcode' },
        { detail: '"PC1" is not a valid UK postcode (for example SW1A 1AA).', code: 'invalid_postcode', attr: 'supply_addresses.1.supply_postcode' },
      ],
    });
  });

  test('staging refuses it too, with the same errors', async () => {
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: withPostcodes('SW1A 1AA', 'not a postcode') });
    assert.equal(res.status, 400, res.body);
    assert.equal(res.json.code, 'account_failed_validation');
    assert.deepEqual(errorsOf(res).map((e: any) => [e.code, e.attr]), [['invalid_postcode', 'supply_addresses.0.supply_postcode'], ['invalid_postcode', 'supply_addresses.1.supply_postcode']]);
  });

  test('a GB postcode in lower case or without its space is accepted, echoed as sent by validate-account', async () => {
    const payload = withPostcodes('sw1a1aa', 'bs2  0qp');
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: payload });
    assert.equal(res.status, 200, res.body);
    assert.equal(res.body, JSON.stringify(payload));
  });

  test('it is stored normalised: upper case, one space, in the staged data and on the created account', async () => {
    const payload = withPostcodes('sw1a1aa', 'bs2  0qp');
    const { number } = await stageAndCreate(t, tenant, payload);
    const read = await call(t.app, 'GET', `/v1/data-import/accounts/${tenant.supplier}/${payload.external_account_number}/`, { token: tenant.token });
    assert.equal(read.status, 200, read.body);
    assert.equal(read.json.service_account_number, number);
    assert.equal(read.json.billing_address.postal_code, 'SW1A 1AA');
    assert.equal(read.json.supply_addresses[0].supply_postcode, 'BS2 0QP');
    const staged = await t.store.db.selectFrom('account_imports').select('data')
      .where('external_account_number', '=', payload.external_account_number).executeTakeFirstOrThrow();
    const data = staged.data as any;
    assert.equal(data.billing_address.postal_code, 'SW1A 1AA');
    assert.equal(data.supply_addresses[0].supply_postcode, 'BS2 0QP');
  });

  test('another country: its format is checked where it is known, and the postcode is kept as sent', async () => {
    const refused = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withPostcodes('7500', '75001', 'FR') });
    assert.equal(refused.status, 400, refused.body);
    assert.deepEqual(errorsOf(refused), [
      { detail: '"7500" is not a valid postcode for FR.', code: 'invalid_postcode', attr: 'billing_address.postal_code' },
    ]);
    const accepted = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withPostcodes('75001', '75008', 'FR') });
    assert.equal(accepted.status, 200, accepted.body);
  });

  test('an invalid billing country has its own error and no postcode error', async () => {
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withPostcodes('whatever', 'whatever', 'XX') });
    assert.equal(res.status, 400, res.body);
    assert.deepEqual(errorsOf(res).map((e: any) => [e.code, e.attr]), [['invalid_country', 'billing_address.country']]);
  });
});
