import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as admin from '../../src/modules/admin/index.ts';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { DEFAULT_VENDOR_TIMEOUT_MS, isEndedStatus, retryPolicyFor, VENDOR_CALL_LIMIT_MS } from '../../src/modules/payment-instructions/index.ts';
import { createVendorClient } from '../../src/modules/payment-instructions/index.ts';
import { closedPortUrl, startFakeVendor, type Behaviour } from '../support/fake-vendor.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

const t = await buildTestApp();
const fake = await startFakeVendor();
const URL_CREATE = '/v1/data-import/payment-instruction/create/';
// Tiny timeouts keep the retry paths fast: 3 attempts of 200 ms with 20/40 ms backoff.
const TIMEOUT_MS = 200;

async function createVendor(options: { kind?: 'http' | 'stripe'; url?: string; secret?: string } = {}): Promise<string> {
  const code = unique('VEND');
  await admin.createVendor(t.store.db, code, {
    kind: options.kind ?? 'http', url: options.url ?? fake.url, secret: options.secret, timeoutMs: TIMEOUT_MS,
  });
  return code;
}

async function setup(vendor: Parameters<typeof createVendor>[0] = { secret: 's3cret' }) {
  const tenant = await createTenant(t);
  return { tenant, account: await insertImportedAccount(t, tenant), vendor: await createVendor(vendor) };
}

function post(tenant: Tenant, body: unknown) {
  return call(t.app, 'POST', URL_CREATE, { token: tenant.token, body });
}

function bodyFor(tenant: Tenant, externalAccountNumber: string, vendor: string, reference: string, type = 'CARD') {
  return { import_supplier: tenant.supplier, external_account_number: externalAccountNumber, vendor, reference, type };
}

function referenceWith(behaviour: Behaviour): string {
  const reference = unique(`ref-${behaviour}`);
  fake.set(reference, behaviour);
  return reference;
}

function storedFor(accountId: number) {
  return t.store.db.selectFrom('payment_instructions').selectAll().where('account_id', '=', accountId).execute();
}

/** Asserts the status and the whole error body: detail, code, and an `errors` item at `attr` when a field is at fault. */
function assertError(res: { status: number; json: any }, status: number, expected: { detail: string; code: string; attr?: string }): void {
  const { detail, code, attr } = expected;
  assert.equal(res.status, status);
  assert.deepEqual(res.json, { detail, code, ...(attr ? { errors: [{ detail, code, attr }] } : {}) });
}

describe('POST payment-instruction/create/: the vendor knows the instruction', () => {
  test('201, and only non-sensitive details are stored', async () => {
    const { tenant, account, vendor } = await setup();
    const reference = referenceWith('found');
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
    assert.equal(res.status, 201);
    assert.deepEqual(res.json, { service_account_number: account.serviceAccountNumber, reference });

    const rows = await storedFor(account.accountId);
    assert.equal(rows.length, 1);
    const row = rows[0]!;
    assert.equal(row.reference, reference);
    assert.equal(row.type, 'CARD');
    assert.equal(row.status, 'active');
    assert.equal(row.active, true);
    assert.deepEqual(row.details, {
      reference, type: 'CARD', status: 'active', brand: 'visa', last4: '4242', expiry: '12/30', holder: { name: 'Ada Lovelace' },
    });
    assert.doesNotMatch(JSON.stringify(row), /4242424242424242|4242 4242 4242 4242|GB33BUKB|55555555|"123"/);
  });

  test('GET /payment-instructions/<reference>, and the Bearer secret only when one is set', async () => {
    const { tenant, account, vendor } = await setup();
    for (const [vendorCode, authorization] of [[vendor, 'Bearer s3cret'], [await createVendor(), undefined]] as const) {
      const reference = `${unique('ref')}.v2_A~b`;
      fake.set(reference, 'found');
      const other = vendorCode === vendor ? account : await insertImportedAccount(t, tenant);
      assert.equal((await post(tenant, bodyFor(tenant, other.externalAccountNumber, vendorCode, reference))).status, 201);
      assert.deepEqual(fake.requests.filter((r) => r.reference === reference),
        [{ path: `/payment-instructions/${reference}`, reference, authorization }]);
    }
  });

  test('flaky vendor (two 500s, then 200): retried inside the request, 201', async () => {
    const { tenant, account, vendor } = await setup();
    const reference = referenceWith('flaky');
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
    assert.equal(res.status, 201);
    assert.equal(fake.hits(reference), 3);
    assert.equal((await storedFor(account.accountId)).length, 1);
  });
});

describe('POST payment-instruction/create/: vendor failures', () => {
  // Final answers: asked once, nothing stored. A broken 200 is the vendor's bug: 500, but no retry helps.
  const finals = [
    ['not_found', 400, (vendor: string) => ({ code: 'payment_instruction_not_found', attr: 'reference',
      detail: `Payment vendor "${vendor}" has no payment instruction with this reference.` })],
    ['forbidden', 400, (vendor: string) => ({ code: 'payment_vendor_rejected',
      detail: `Payment vendor "${vendor}" rejected the request (HTTP 403). Do not retry the request as it is.` })],
    ['malformed', 500, (vendor: string) => ({ code: 'payment_vendor_unavailable',
      detail: `Payment vendor "${vendor}" answered 200 without a JSON object holding reference, type and status. Retry the request as it is.` })],
  ] as const;
  for (const [behaviour, status, expected] of finals) {
    test(`vendor answers ${behaviour}: ${status} ${expected('').code}, not retried`, async () => {
      const { tenant, account, vendor } = await setup();
      const reference = referenceWith(behaviour);
      const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
      assertError(res, status, expected(vendor));
      assert.equal(fake.hits(reference), 1);
      assert.equal((await storedFor(account.accountId)).length, 0);
    });
  }

  for (const behaviour of ['error', 'hang'] as const) {
    test(`vendor ${behaviour === 'error' ? 'answering 500' : 'timing out'}: 500 payment_vendor_unavailable after 3 attempts`, async () => {
      const { tenant, account, vendor } = await setup();
      const reference = referenceWith(behaviour);
      const started = Date.now();
      const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
      const failure = behaviour === 'hang' ? 'did not answer within 200 ms' : 'answered HTTP 500';
      assertError(res, 500, { code: 'payment_vendor_unavailable', detail: `Payment vendor "${vendor}" ${failure}. (3 attempts) Retry the request as it is.` });
      assert.equal(fake.hits(reference), 3);
      assert.ok(Date.now() - started < 3 * TIMEOUT_MS + 1_000, 'retries stay bounded');
      assert.equal((await storedFor(account.accountId)).length, 0);
    });
  }

  test('vendor refusing connections: 500 payment_vendor_unavailable', async () => {
    const { tenant, account } = await setup();
    const vendor = await createVendor({ url: await closedPortUrl() });
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, 'ref-1'));
    assertError(res, 500, { code: 'payment_vendor_unavailable',
      detail: `Payment vendor "${vendor}" could not be reached (ECONNREFUSED). (3 attempts) Retry the request as it is.` });
  });
});

describe('POST payment-instruction/create/: one active instruction per account', () => {
  test('re-posting the same instruction: 201 again, vendor not asked again, one row', async () => {
    const { tenant, account, vendor } = await setup();
    const reference = referenceWith('found');
    const body = bodyFor(tenant, account.externalAccountNumber, vendor, reference);
    assert.equal((await post(tenant, body)).status, 201);
    const again = await post(tenant, body);
    assert.equal(again.status, 201);
    assert.deepEqual(again.json, { service_account_number: account.serviceAccountNumber, reference });
    assert.equal(fake.hits(reference), 1);
    assert.equal((await storedFor(account.accountId)).length, 1);
  });

  test('the same vendor and reference with another type: 400 conflict at type, the stored one kept', async () => {
    const { tenant, account, vendor } = await setup();
    const reference = referenceWith('found');
    assert.equal((await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference, 'CARD'))).status, 201);
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference, 'DIRECT_DEBIT'));
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, {
      detail: 'Items of this request were imported before with other content; only an exact repeat is accepted as already existing.',
      code: 'conflict',
      errors: [{ code: 'conflict', attr: 'type', detail: `Payment instruction "${reference}" exists with type CARD; this request sends DIRECT_DEBIT.` }],
    });
    assert.equal(fake.hits(reference), 1);
    assert.deepEqual((await storedFor(account.accountId)).map((r) => r.type), ['CARD']);
  });

  test('a different instruction while one is active: 400 active_payment_instruction_exists', async () => {
    const { tenant, account, vendor } = await setup();
    const first = referenceWith('found');
    assert.equal((await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, first))).status, 201);
    const second = referenceWith('found');
    const otherVendor = await createVendor();
    for (const [vendorCode, reference] of [[vendor, second], [otherVendor, first]] as const) {
      assertError(await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendorCode, reference)), 400, {
        code: 'active_payment_instruction_exists', detail: 'The account already has an active payment instruction with another vendor or reference.' });
    }
    assert.equal(fake.hits(second), 0);
    assert.deepEqual((await storedFor(account.accountId)).map((r) => r.reference), [first]);
  });

  test('an instruction the vendor reports as ended: 400 payment_instruction_not_active, nothing stored; a live one then goes in', async () => {
    const { tenant, account, vendor } = await setup();
    const ended = referenceWith('cancelled');
    assertError(await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, ended)), 400, {
      code: 'payment_instruction_not_active', attr: 'reference',
      detail: `Payment vendor "${vendor}" reports instruction "${ended}" as "CANCELLED": only a live instruction can be the account's active one.` });
    assert.deepEqual(await storedFor(account.accountId), []);
    const live = referenceWith('found');
    assert.equal((await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, live))).status, 201);
    assert.deepEqual((await storedFor(account.accountId)).map((r) => r.reference), [live]);
  });

  test('the ended statuses, compared without case, spaces, _ or -; any other status is live', () => {
    for (const status of ['CANCELLED', 'canceled', 'Expired', 'REVOKED', 'closed', 'In-Active', 'terminated', 'FAILED', 'deleted', 'ended']) {
      assert.equal(isEndedStatus(status), true, status);
    }
    for (const status of ['active', 'ACTIVE', 'pending', 'pending_cancellation', 'live', '', null]) {
      assert.equal(isEndedStatus(status), false, String(status));
    }
  });

  test('ten identical posts at once: all 201, one row', async () => {
    const { tenant, account, vendor } = await setup();
    const reference = referenceWith('found');
    const body = bodyFor(tenant, account.externalAccountNumber, vendor, reference);
    const results = await Promise.all(Array.from({ length: 10 }, () => post(tenant, body)));
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(201));
    assert.equal((await storedFor(account.accountId)).length, 1);
  });

  test('two different instructions at once: one 201, one active_payment_instruction_exists', async () => {
    const { tenant, account, vendor } = await setup();
    const references = [referenceWith('found'), referenceWith('found')];
    const results = await Promise.all(references.map((r) => post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, r))));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 400]);
    assert.equal(results.find((r) => r.status === 400)!.json.code, 'active_payment_instruction_exists');
    const rows = await storedFor(account.accountId);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.reference, results.find((r) => r.status === 201)!.json.reference);
  });
});

describe('POST payment-instruction/create/: supplier, account, vendor', () => {
  test('unknown vendor: 400 payment_vendor_not_found at vendor', async () => {
    const { tenant, account } = await setup();
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, 'NO-SUCH-VENDOR', 'ref-1'));
    assertError(res, 400, { code: 'payment_vendor_not_found', attr: 'vendor', detail: 'No payment vendor with code "NO-SUCH-VENDOR".' });
  });

  test("another organisation's supplier: 400 import_supplier_not_found, as if unknown", async () => {
    const { tenant, account, vendor } = await setup();
    const stranger = await createTenant(t);
    const res = await post(stranger, bodyFor(tenant, account.externalAccountNumber, vendor, referenceWith('found')));
    assertError(res, 400, { code: 'import_supplier_not_found', attr: 'import_supplier', detail: `No import supplier with code "${tenant.supplier}".` });
  });

  test('unknown account, and an account only staged: 404 account_not_found (before the vendor is checked)', async () => {
    const { tenant, vendor } = await setup();
    const staged = await insertStagedOnly(t, tenant);
    for (const number of [unique('EXT'), staged]) {
      for (const vendorCode of [vendor, 'NO-SUCH-VENDOR']) {
        const res = await post(tenant, bodyFor(tenant, number, vendorCode, 'ref-1'));
        assertError(res, 404, { code: 'account_not_found', attr: 'external_account_number', detail: `No imported account "${number}" for this import supplier.` });
      }
    }
  });
});

describe('POST payment-instruction/create/: validation', () => {
  // Document order: fields as sent, then the missing ones.
  test('unknown field, missing field, over-long and wrong-choice values: every error at once', async () => {
    const { tenant } = await setup();
    const res = await post(tenant, {
      import_supplier: tenant.supplier, external_account_number: 'x'.repeat(101), reference: 'r'.repeat(256), type: 'CHEQUE', extra: 1,
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { detail: 'The request failed validation.', code: 'invalid', errors: [
      { detail: 'Ensure this field has no more than 100 characters.', code: 'max_length', attr: 'external_account_number' },
      { detail: 'Ensure this field has no more than 255 characters.', code: 'max_length', attr: 'reference' },
      { detail: '"CHEQUE" is not a valid choice. Allowed: CARD, DIRECT_DEBIT, BANK_TRANSFER.', code: 'invalid_choice', attr: 'type' },
      { detail: 'This field is not part of the documented payload and must not be sent.', code: 'unknown_field', attr: 'extra' },
      { detail: 'This field is required.', code: 'required', attr: 'vendor' },
    ] });
  });

  test('wrong types, blank and badly formed values; the auth guard runs first', async () => {
    const { tenant } = await setup();
    assertError(await call(t.app, 'POST', URL_CREATE, { body: {} }), 401, { code: 'not_authenticated', detail: 'Authentication credentials were not provided.' });
    const res = await post(tenant, { import_supplier: 1, external_account_number: '', vendor: null, reference: ' padded', type: 'CARD' });
    assert.equal(res.status, 400);
    assert.deepEqual(res.json, { detail: 'The request failed validation.', code: 'invalid', errors: [
      { detail: 'Expected a string.', code: 'invalid', attr: 'import_supplier' },
      { detail: 'This field may not be blank.', code: 'blank', attr: 'external_account_number' },
      { detail: 'This field may not be null.', code: 'null', attr: 'vendor' },
      { detail: 'This value has an invalid format.', code: 'invalid', attr: 'reference' },
    ] });
  });
});

// The reference is one segment of the vendor's URL path, and the request carries the vendor's secret:
// `..` made the service GET the vendor's `/` with it, `.` its `/payment-instructions/` (stored as the
// instruction when answered). Each vendor here has a secret of its own, so "never sent" is checked on
// every request the fake received, whatever its path. Beyond the dot segments and what decodes to a
// `/`, `?` or `#`, anything outside the unreserved characters is refused too (a server may decode it,
// or fold the full-width solidus to `/`).
const UNSENDABLE_REFERENCES = ['..', '.', '...', '%2e%2e', '.%2E', '%2e', 'a/b', '/', 'a%2fb', '?x', '#x', 'a\\b', '..\\', 'a b', 'a;b', 'ａ／ｂ'];

describe('POST payment-instruction/create/: references that would change the vendor path', () => {
  for (const kind of ['http', 'stripe'] as const) {
    test(`${kind}: 400 invalid at reference for each such reference; the secret never leaves`, async () => {
      const secret = unique('sk_path');
      const { tenant, account, vendor } = await setup({ kind, secret });
      for (const reference of UNSENDABLE_REFERENCES) {
        fake.set(reference, 'found');
        const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
        assert.equal(res.status, 400, reference);
        assert.deepEqual(res.json, { detail: 'The request failed validation.', code: 'invalid',
          errors: [{ detail: 'This value has an invalid format.', code: 'invalid', attr: 'reference' }] }, reference);
      }
      assert.deepEqual(fake.requests.filter((r) => r.authorization === `Bearer ${secret}`), []);
      assert.equal((await storedFor(account.accountId)).length, 0);
    });
  }

  test('a good reference still reaches /payment-instructions/<reference> with the secret', async () => {
    const secret = unique('sk_path');
    const { tenant, account, vendor } = await setup({ secret });
    const reference = `pm_${unique('1Ab').replace('-', '.')}~x`;
    fake.set(reference, 'found');
    assert.equal((await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference))).status, 201);
    assert.deepEqual(fake.requests.filter((r) => r.authorization === `Bearer ${secret}`),
      [{ path: `/payment-instructions/${reference}`, reference, authorization: `Bearer ${secret}` }]);
  });

  test('the vendor clients themselves refuse them, whoever calls: rejected, no request made', async () => {
    for (const kind of ['http', 'stripe'] as const) {
      const secret = unique('sk_client');
      const [row] = await t.store.db.selectFrom('payment_vendors').selectAll().where('code', '=', await createVendor({ kind, secret })).execute();
      const client = createVendorClient(row!);
      for (const reference of UNSENDABLE_REFERENCES) {
        const result = await client.fetchInstruction(reference);
        assert.deepEqual(result, { outcome: 'rejected',
          detail: `The reference cannot be sent to payment vendor "${row!.code}": it must be one URL path segment.` }, reference);
      }
      assert.deepEqual(fake.requests.filter((r) => r.authorization === `Bearer ${secret}`), []);
    }
  });
});

describe('kind stripe: PaymentMethods through the official SDK', () => {
  const stripeSetup = () => setup({ kind: 'stripe', secret: 'sk_test_fake' });

  test('found: 201, brand, last4 and expiry stored, never the number', async () => {
    const { tenant, account, vendor } = await stripeSetup();
    const reference = unique('pm');
    fake.set(reference, 'found');
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
    assert.equal(res.status, 201);
    assert.deepEqual(res.json, { service_account_number: account.serviceAccountNumber, reference });
    assert.deepEqual(fake.requests.filter((r) => r.reference === reference),
      [{ path: `/v1/payment_methods/${reference}`, reference, authorization: 'Bearer sk_test_fake' }]);
    const [row] = await storedFor(account.accountId);
    assert.equal(row!.status, 'active');
    assert.deepEqual(row!.details, {
      id: reference, object: 'payment_method', type: 'card', livemode: false,
      card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2099, funding: 'credit', country: 'GB' },
    });
  });

  test('a card past its expiry month: 400 payment_instruction_not_active, nothing stored', async () => {
    const { tenant, account, vendor } = await stripeSetup();
    const reference = unique('pm');
    fake.set(reference, 'cancelled');
    const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'payment_instruction_not_active');
    assert.match(res.json.detail, /as "expired"/);
    assert.deepEqual(await storedFor(account.accountId), []);
  });

  test('resource_missing: 400 payment_instruction_not_found; 403: 400 payment_vendor_rejected', async () => {
    const { tenant, account, vendor } = await stripeSetup();
    const missing = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, unique('pm')));
    assertError(missing, 400, { code: 'payment_instruction_not_found', attr: 'reference', detail: `Payment vendor "${vendor}" has no payment method with this reference.` });
    const reference = referenceWith('forbidden');
    const rejected = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
    assertError(rejected, 400, { code: 'payment_vendor_rejected', detail: `Payment vendor "${vendor}" rejected the request (HTTP 403). Do not retry the request as it is.` });
    assert.equal(fake.hits(reference), 1);
  });

  test('no API key configured: 400 payment_vendor_rejected without calling Stripe', async () => {
    const { tenant, account } = await stripeSetup();
    const vendor = await createVendor({ kind: 'stripe' });
    const reference = referenceWith('found');
    assertError(await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference)), 400, {
      code: 'payment_vendor_rejected', detail: `Payment vendor "${vendor}" has no API key configured. Do not retry the request as it is.` });
    assert.equal(fake.hits(reference), 0);
  });

  test('500s and timeouts: 500 payment_vendor_unavailable after 3 attempts; flaky: 201', async () => {
    const { tenant, account, vendor } = await stripeSetup();
    for (const behaviour of ['error', 'hang'] as const) {
      const reference = referenceWith(behaviour);
      const res = await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, reference));
      const failure = behaviour === 'hang' ? 'could not be reached or did not answer within 200 ms' : 'answered HTTP 500';
      assertError(res, 500, { code: 'payment_vendor_unavailable', detail: `Payment vendor "${vendor}" ${failure}. (3 attempts) Retry the request as it is.` });
      assert.equal(fake.hits(reference), 3);
    }
    const flaky = referenceWith('flaky');
    assert.equal((await post(tenant, bodyFor(tenant, account.externalAccountNumber, vendor, flaky))).status, 201);
    assert.equal(fake.hits(flaky), 3);
  });
});

describe('a vendor call is bounded as a whole', () => {
  const vendorRow = (timeoutMs: number) => ({
    id: 0, code: unique('VEND'), kind: 'http', url: fake.url, secret: null, timeout_ms: timeoutMs, created_at: new Date(),
  });

  test('a vendor that never answers, with the longest timeout_ms: the call gives up at its limit', async () => {
    const reference = referenceWith('hang');
    const limitMs = 600;
    const started = Date.now();
    const result = await createVendorClient(vendorRow(120_000), { ...retryPolicyFor(120_000), limitMs }).fetchInstruction(reference);
    const took = Date.now() - started;
    assert.equal(result.outcome, 'unavailable');
    assert.ok(took >= limitMs - 50 && took < limitMs + 1_000, `gave up after ${took} ms`);
    assert.equal(fake.hits(reference), 1, 'no second try started once the limit was spent');
  });

  test('every vendor\'s tries and backoff fit in VENDOR_CALL_LIMIT_MS, well under a record\'s 300 s; no timeout_ms: the default', () => {
    for (const timeoutMs of [1, 200, 5_000, 30_000, 120_000]) {
      const policy = retryPolicyFor(timeoutMs);
      assert.equal(policy.limitMs, VENDOR_CALL_LIMIT_MS);
      assert.equal(policy.timeoutMs, Math.min(timeoutMs, VENDOR_CALL_LIMIT_MS));
    }
    for (const missing of [0, -1, null, undefined]) assert.equal(retryPolicyFor(missing).timeoutMs, DEFAULT_VENDOR_TIMEOUT_MS);
    assert.ok(VENDOR_CALL_LIMIT_MS * 5 <= 300_000, 'a fifth of the default JOB_RECORD_TIMEOUT_SECONDS at most');
  });
});
