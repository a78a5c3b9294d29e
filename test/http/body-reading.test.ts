import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { insertImportedAccount } from '../support/accounts.ts';
import { STAGE_URL } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';

// How bodies are read (issue #14): an encoding or charset the service would not really decode is a
// 415, not read as plain UTF-8; and numbers are checked against the text that was sent, because
// JSON.parse silently turns 1e309 into Infinity (stored as null) and 1.1000000000000001 into 1.1.
const t = await buildTestApp();
const tenant = await createTenant(t);
// A second app over the same store with a small body limit, for bodies that inflate past it.
const small = await buildApp({ modules: t.modules, config: loadConfig({ DATABASE_URL: t.config.databaseUrl ?? '', BODY_LIMIT_BYTES: '8192' }) });
after(() => small.close());
const VALIDATE_URL = '/v1/data-import/validate-account/';
const TRANSACTIONS_URL = '/v1/data-import/transactions/create/';

const post = async (url: string, payload: string | Buffer, headers: Record<string, string> = {}, app = t.app) => {
  const res = await app.inject({ method: 'POST', url, payload, headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json', ...headers } });
  return { status: res.statusCode, json: res.json(), body: res.body };
};

describe('request encodings and charsets', () => {
  test('a gzipped JSON body is read like the plain one', async () => {
    const text = JSON.stringify(accountPayload(tenant.supplier));
    const plain = await post(VALIDATE_URL, text);
    const gzipped = await post(VALIDATE_URL, gzipSync(text), { 'content-encoding': 'gzip' });
    assert.equal(gzipped.status, 200, gzipped.body);
    assert.deepEqual(gzipped.json, plain.json);
  });

  test('any other Content-Encoding is 415, and the body is not read as plain', async () => {
    const text = JSON.stringify(accountPayload(tenant.supplier));
    for (const encoding of ['br', 'deflate', 'compress', 'gzip, br', 'zstd']) {
      const res = await post(VALIDATE_URL, text, { 'content-encoding': encoding });
      assert.equal(res.status, 415, encoding);
      assert.deepEqual(res.json, { detail: `Content-Encoding "${encoding}" is not supported; use gzip or none.`, code: 'unsupported_media_type' });
    }
    assert.equal((await post(VALIDATE_URL, text, { 'content-encoding': 'identity' })).status, 200);
  });

  test('a charset other than UTF-8 is 415; utf-8 in any case is read', async () => {
    const text = JSON.stringify(accountPayload(tenant.supplier));
    for (const charset of ['utf-16', 'latin1', 'iso-8859-1']) {
      const res = await post(VALIDATE_URL, Buffer.from(text, charset === 'utf-16' ? 'utf16le' : 'latin1'), { 'content-type': `application/json; charset=${charset}` });
      assert.equal(res.status, 415, charset);
      assert.deepEqual(res.json, { detail: `Charset "${charset}" is not supported; send the body in UTF-8.`, code: 'unsupported_media_type' });
    }
    assert.equal((await post(VALIDATE_URL, text, { 'content-type': 'application/json; charset=UTF-8' })).status, 200);
  });

  test('a gzipped body that inflates past the body limit is 413; a broken one is parse_error', async () => {
    const bomb = gzipSync(JSON.stringify({ import_supplier: tenant.supplier, pad: 'x'.repeat(5_000_000) }));
    assert.ok(bomb.length < 8192, 'the compressed body itself is under the limit');
    const res = await post(VALIDATE_URL, bomb, { 'content-encoding': 'gzip' }, small);
    assert.equal(res.status, 413);
    assert.deepEqual(res.json, { detail: 'The request body is larger than the limit.', code: 'payload_too_large' });
    const broken = await post(VALIDATE_URL, Buffer.concat([gzipSync('{"a": 1}').subarray(0, 12), Buffer.from('not gzip')]), { 'content-encoding': 'gzip' });
    assert.equal(broken.status, 400);
    assert.deepEqual(broken.json, { detail: 'The body is not valid gzip.', code: 'parse_error' });
  });
});

const INEXACT = 'This number cannot be kept exactly as sent (too large, too small or too many digits); send at most 15 significant digits.';

describe('numbers checked against the text that was sent', () => {
  test('1e309, 1e-400 and 20 significant digits inside a metadata value are 400 at their field, on validate and stage', async () => {
    for (const literal of ['1e309', '-1e309', '1e-400', '12345678901234567890', '0.1000000000000000055511151231257827']) {
      const body = accountPayload(tenant.supplier, { metadata: [{ key: 'ok', value: { x: 1 } }, { key: 'big', value: { n: 0, list: [1, 'N'] } }] });
      const text = JSON.stringify(body).replace('"N"', literal);
      for (const url of [VALIDATE_URL, STAGE_URL]) {
        const res = await post(url, text);
        assert.equal(res.status, 400, `${literal} ${res.body}`);
        assert.deepEqual(res.json, {
          detail: 'The account data failed validation.', code: 'account_failed_validation',
          errors: [{ detail: INEXACT, code: 'invalid', attr: 'metadata.1.value.list.1' }],
        });
      }
      const rows = await t.store.db.selectFrom('account_imports').select('id').where('external_account_number', '=', body.external_account_number).execute();
      assert.deepEqual(rows, [], literal);
    }
  });

  test('numbers written differently but exactly (exponents, trailing zeros, 15 digits) pass and are kept', async () => {
    const body = accountPayload(tenant.supplier, { metadata: [{ key: 'exact', value: { list: ['N'] } }] });
    const text = JSON.stringify(body).replace('"N"', '1.10, 1e2, 2.5E-3, -0, 123456789012345, 0.000000000000001, 1e300, 9007199254740992');
    const res = await post(STAGE_URL, text);
    assert.equal(res.status, 201, res.body);
    const row = await t.store.db.selectFrom('account_imports').select('data').where('external_account_number', '=', body.external_account_number).executeTakeFirstOrThrow();
    assert.deepEqual((row.data as any).metadata[0].value.list, [1.1, 100, 0.0025, 0, 123456789012345, 1e-15, 1e300, 9007199254740992]);
  });

  test('an amount sent as 1.1000000000000001 has more than two decimals; 1.10 is 1.10', async () => {
    const account = await insertImportedAccount(t, tenant);
    const batch = (amount: string) => JSON.stringify({
      import_supplier: tenant.supplier, external_account_number: account.externalAccountNumber,
      transactions: [{ transaction_id: `T-${amount}`, transaction_date: '2024-03-01', amount: 'AMOUNT', type: 'CHARGE', reason: 'IMPORTED_CHARGE' }],
    }).replace('"AMOUNT"', amount);
    for (const amount of ['1.1000000000000001', '0.1000000000000000055511151231257827', '2.00000000000000001']) {
      const res = await post(TRANSACTIONS_URL, batch(amount));
      assert.equal(res.status, 400, amount);
      assert.deepEqual(res.json, {
        detail: 'The request failed validation.', code: 'invalid',
        errors: [{ detail: 'Ensure that there are no more than 2 decimal places.', code: 'invalid', attr: 'transactions.0.amount' }],
      });
    }
    const ok = await post(TRANSACTIONS_URL, batch('1.10'));
    assert.equal(ok.status, 201, ok.body);
    assert.equal(ok.json.results[0].transaction_data.amount, '1.10');
    const stored = await t.store.db.selectFrom('transactions').select('amount').where('account_id', '=', account.accountId).execute();
    assert.deepEqual(stored, [{ amount: '1.10' }]);
  });

  test('a migration job record holding 1e309 fails at parse, at its field, and is not stored as null', async () => {
    const job = await post('/v1/data-import/migration-jobs/', JSON.stringify({ import_supplier: tenant.supplier, operations_team_name: tenant.team }));
    assert.equal(job.status, 201, job.body);
    const account = accountPayload(tenant.supplier, { metadata: [{ key: 'big', value: { n: 'N' } }] });
    const line = JSON.stringify({ account }).replace('"N"', '1e309');
    const upload = await post(`/v1/data-import/migration-jobs/${job.json.id}/records/`, line, { 'content-type': 'application/x-ndjson' });
    assert.deepEqual([upload.status, upload.json], [200, { received: 1, total_records: 1 }]);
    const results = await t.app.inject({ method: 'GET', url: `/v1/data-import/migration-jobs/${job.json.id}/records/`, headers: { authorization: `Token ${tenant.token}` } });
    const [record] = results.body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual([record.outcome, record.step, record.errors], ['failed', 'parse', [{ code: 'invalid', attr: 'account.metadata.0.value.n', detail: INEXACT }]]);
  });
});
