import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { accountPayload } from '../support/payloads.ts';
import { STAGE_URL } from '../support/imports.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// invalid_phone_number tells a number that is not one at all (no +, letters, a length no number of
// its country code has) from a well-formed number in a range that is not in use. The code is the same.

const t = await buildTestApp();
const tenant = await createTenant(t);
const VALIDATE_URL = '/v1/data-import/validate-account/';

const MALFORMED_MOBILE = 'Enter a valid phone number in international format with a leading +.';
const MALFORMED_LANDLINE = 'Enter a valid phone number: international with a leading +, or national in the billing address\'s country.';
const unallocated = (code: string) =>
  `This number has a valid format for country code +${code} but is not a real number: no numbers are allocated in its range.`;

function withPhones(mobile: string, landline: string, alternative: string) {
  const payload = accountPayload(tenant.supplier);
  const customer = payload.customers[0]!;
  customer.mobile = mobile;
  customer.landline = landline;
  customer.alternative_phone_numbers = [{ phone_number: alternative }];
  return payload;
}
const PHONE_ATTRS = ['customers.0.mobile', 'customers.0.landline', 'customers.0.alternative_phone_numbers.0.phone_number'];
const phoneErrors = (details: string[]) =>
  details.map((detail, i) => ({ detail, code: 'invalid_phone_number', attr: PHONE_ATTRS[i] }));

describe('phone number details', () => {
  test('a well-formed number in an unallocated range says so, not that a + is missing', async () => {
    const res = await call(t.app, 'POST', VALIDATE_URL, {
      token: tenant.token, body: withPhones('+44 4000 000000', '0400 000000', '+33 0 12 34 56 78'),
    });
    assert.equal(res.status, 400, res.body);
    assert.deepEqual(res.json, {
      detail: 'The account data failed validation.', code: 'account_failed_validation',
      errors: phoneErrors([unallocated('44'), unallocated('44'), unallocated('33')]),
    });
  });

  test('a malformed number (no + on a mobile, letters, too short for its country code) keeps the format detail', async () => {
    for (const [mobile, landline, alternative] of [['07911123456', '12ab', '+44 12'], ['hello', 'not a number', '+44 7911 12']] as const) {
      const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withPhones(mobile, landline, alternative) });
      assert.equal(res.status, 400, res.body);
      assert.deepEqual(res.json.errors, phoneErrors([MALFORMED_MOBILE, MALFORMED_LANDLINE, MALFORMED_LANDLINE]), mobile);
    }
  });

  test('staging answers the same details', async () => {
    const res = await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: withPhones('+44 4000 000000', '12ab', '+447911123456') });
    assert.equal(res.status, 400, res.body);
    assert.deepEqual(res.json.errors, phoneErrors([unallocated('44'), MALFORMED_LANDLINE]));
  });

  test('valid numbers pass', async () => {
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withPhones('+44 7911 123456', '020 7946 0018', '+33 9 99 99 99 99') });
    assert.equal(res.status, 200, res.body);
  });
});
