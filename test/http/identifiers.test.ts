import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PROCESS_URL, STAGE_URL } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// Identifiers that appear in URL paths (D5, issue #14): `.` and `..` are refused as `/` is (an HTTP
// client resolves them, so the account's status URL would name another path), and Unicode format
// characters (category Cf) as control characters are.
const t = await buildTestApp();
const tenant = await createTenant(t);
const VALIDATE_URL = '/v1/data-import/validate-account/';
const INVALID = { code: 'invalid', detail: 'This value has an invalid format.' };

const REFUSED: Array<[string, string]> = [
  ['a single dot', '.'],
  ['two dots', '..'],
  ['a zero-width space', 'EXT\u200b1'],
  ['a right-to-left override', '\u202eEXT1'],
  ['a byte order mark', '\ufeffEXT1'],
  ['a soft hyphen', 'EXT\u00ad1'],
];

describe('electricity supply point identifiers are matched as written', () => {
  // Unique across every account: a value that prints like another (surrounding white space, a
  // zero-width space) would let one meter point be registered on two accounts.
  const withIdentifier = (identifier: string) => {
    const body = accountPayload(tenant.supplier);
    const point = body.supply_addresses[0]!.supply_points[0] as { identifier: string };
    point.identifier = identifier;
    return body;
  };
  const ATTR = 'supply_addresses.0.supply_points.0.identifier';
  for (const [name, value] of [['only spaces', '   '], ['a trailing space', 'MPAN-1 '], ['a leading tab', '\tMPAN-1'],
    ['a zero-width space', 'MPAN\u200b-1'], ['a line break inside', 'MPAN\n-1']] as const) {
    test(`an identifier with ${name} is invalid`, async () => {
      const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withIdentifier(value) });
      assert.equal(res.status, 400, res.body);
      assert.deepEqual(res.json.errors, [{ ...INVALID, attr: ATTR }]);
    });
  }
  test('spaces inside, and letters of any script, are fine', async () => {
    for (const value of ['S 01 801 101 22', 'MPAN-É-1']) {
      const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withIdentifier(value) });
      assert.equal(res.status, 200, res.body);
    }
  });
});

describe('identifiers that appear in URL paths', () => {
  for (const [name, value] of REFUSED) {
    test(`external_account_number with ${name} is invalid at validate and stage`, async () => {
      const body = accountPayload(tenant.supplier, { external_account_number: value });
      for (const url of [VALIDATE_URL, STAGE_URL]) {
        const res = await call(t.app, 'POST', url, { token: tenant.token, body });
        assert.equal(res.status, 400, res.body);
        assert.deepEqual(res.json, {
          detail: 'The account data failed validation.', code: 'account_failed_validation',
          errors: [{ ...INVALID, attr: 'external_account_number' }],
        });
      }
    });
  }

  test('process: a supplier code or account number of dots is invalid', async () => {
    const res = await call(t.app, 'POST', PROCESS_URL, {
      token: tenant.token, body: { import_supplier_code: '..', external_account_number: '.', operations_team_name: tenant.team },
    });
    assert.equal(res.status, 400, res.body);
    assert.deepEqual(res.json, {
      detail: 'The request failed validation.', code: 'invalid',
      errors: [{ ...INVALID, attr: 'import_supplier_code' }, { ...INVALID, attr: 'external_account_number' }],
    });
  });

  // One path-parameter schema for every route that names a supplier or an account: a code that no
  // supplier or account can have is refused the same way on each, never looked up.
  const ZWSP = encodeURIComponent('X\u200b1');
  const pathRoutes: Array<[string, string]> = [
    [`/v1/data-import/account-transfer-status/${tenant.supplier}/${ZWSP}/`, 'external_account_number'],
    [`/v1/data-import/accounts/${tenant.supplier}/${ZWSP}/`, 'external_account_number'],
    [`/v1/data-import/stats/${tenant.supplier}/attempts/${ZWSP}/`, 'external_account_number'],
    [`/v1/data-import/all-account-import-processes/${ZWSP}/`, 'import_supplier_code'],
    [`/v1/data-import/pending-account-import-processes/${ZWSP}/`, 'import_supplier_code'],
    [`/v1/data-import/imported-account-import-processes/${ZWSP}/`, 'import_supplier_code'],
    [`/v1/data-import/stats/${ZWSP}/`, 'import_supplier_code'],
  ];
  for (const [url, attr] of pathRoutes) {
    test(`GET ${url.replace(tenant.supplier, '<supplier>')}: 400 invalid at ${attr}`, async () => {
      const res = await call(t.app, 'GET', url, { token: tenant.token });
      assert.equal(res.status, 400, res.body);
      assert.deepEqual(res.json, { detail: 'The request failed validation.', code: 'invalid', errors: [{ ...INVALID, attr }] });
    });
  }

  test('dots inside a longer identifier are fine: "...", ".a", "a..b"', async () => {
    for (const value of ['...', '.a', 'a..b']) {
      const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: accountPayload(tenant.supplier, { external_account_number: value }) });
      assert.equal(res.status, 200, `${value}: ${res.body}`);
    }
  });
});
