import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { STAGE_URL } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// Free-form values (metadata `value`, issue #14): nesting and size are bounded and checked before
// anything recursive touches them, so a value 10,000 levels deep is a precise 400, never a 500.
const t = await buildTestApp();
const tenant = await createTenant(t);
const VALIDATE_URL = '/v1/data-import/validate-account/';

const nested = (levels: number): Record<string, unknown> => {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i += 1) value = { a: value };
  return value;
};
const withValue = (value: unknown) => accountPayload(tenant.supplier, { metadata: [{ key: 'ok', value: { x: 1 } }, { key: 'deep', value: value as Record<string, unknown> }] });
const rejected = (code: string, detail: string) => ({
  detail: 'The account data failed validation.', code: 'account_failed_validation',
  errors: [{ code, detail, attr: 'metadata.1.value' }],
});

describe('free-form values: depth and size', () => {
  test('an object nested 10,000 deep is a 400 at its field on validate and stage, and nothing is stored', async () => {
    // Written as text: JSON.stringify itself recurses and would overflow in the test.
    const body = withValue('DEEP');
    const text = JSON.stringify(body).replace('"DEEP"', `${'{"a":'.repeat(10_000)}{}${'}'.repeat(10_000)}`);
    for (const url of [VALIDATE_URL, STAGE_URL]) {
      const res = await call(t.app, 'POST', url, { token: tenant.token, body: text, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 400, res.body.slice(0, 300));
      assert.deepEqual(res.json, rejected('invalid', 'Ensure this value is nested no more than 32 levels deep.'));
    }
    const rows = await t.store.db.selectFrom('account_imports').select('id').where('external_account_number', '=', body.external_account_number).execute();
    assert.deepEqual(rows, []);
  });

  test('arrays count as levels too; 32 levels are accepted, 33 are not', async () => {
    let arrays: unknown = [];
    for (let i = 2; i < 33; i += 1) arrays = [arrays];
    assert.equal((await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withValue({ a: arrays }) })).status, 400);
    assert.equal((await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withValue(nested(32)) })).status, 200);
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withValue(nested(33)) });
    assert.deepEqual(res.json, rejected('invalid', 'Ensure this value is nested no more than 32 levels deep.'));
  });

  test('a value over 65,536 characters as JSON is max_length', async () => {
    const res = await call(t.app, 'POST', VALIDATE_URL, { token: tenant.token, body: withValue({ text: 'x'.repeat(70_000) }) });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, rejected('max_length', 'Ensure this value has no more than 65536 characters as JSON.'));
  });
});
