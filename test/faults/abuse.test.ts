import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createTokenService } from '../../src/modules/auth/index.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { createTestClock } from '../../src/core/clock.ts';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { bodySchemaOf, boundedArrays } from '../support/fuzz.ts';
import { buildTestApp, call, createTenant, unique } from '../support/test-app.ts';
import * as f from './fixtures.ts';

// Abuse of every REST endpoint (spec 4.1–4.11 and the accounts read endpoint): another
// organisation's token (D3: exactly like an unknown supplier, nothing revealed), no token, an
// expired or malformed token, every array at and over its maximum, and bodies over the size limit.
const t = await buildTestApp();
await t.app.ready();
const owner = await createTenant(t);
const intruder = await createTenant(t);
const imported = await insertImportedAccount(t, owner);
const staged = await insertStagedOnly(t, owner);

type Body = Record<string, any>;
interface Endpoint {
  name: string;
  method: 'GET' | 'POST';
  path: string; // as in the OpenAPI document, to tell whether the route exists yet
  url: (supplier: string) => string;
  body?: (supplier: string) => Body;
  attr?: 'import_supplier' | 'import_supplier_code';
}

const ext = imported.externalAccountNumber;
const ENDPOINTS: Endpoint[] = [
  { name: 'validate-account', method: 'POST', path: f.ROUTES.validate, url: () => f.ROUTES.validate, body: (s) => f.accountPayload(s), attr: 'import_supplier' },
  { name: 'create-or-update', method: 'POST', path: f.ROUTES.stage, url: () => f.ROUTES.stage, body: (s) => f.accountPayload(s), attr: 'import_supplier' },
  { name: 'process', method: 'POST', path: f.ROUTES.process, url: () => f.ROUTES.process, body: (s) => f.processBody(s, staged, owner.team), attr: 'import_supplier_code' },
  { name: 'notes', method: 'POST', path: f.ROUTES.notes, url: () => f.ROUTES.notes, body: (s) => f.notesBody(s, ext), attr: 'import_supplier' },
  { name: 'transactions', method: 'POST', path: f.ROUTES.transactions, url: () => f.ROUTES.transactions, body: (s) => f.transactionsBody(s, ext, [f.transaction(), f.supplyCharge()]), attr: 'import_supplier' },
  { name: 'historical-statements', method: 'POST', path: f.ROUTES.statements, url: () => f.ROUTES.statements, body: (s) => f.statementsBody(s, ext, [f.statement(400)]), attr: 'import_supplier' },
  { name: 'payment-instruction', method: 'POST', path: f.ROUTES.paymentInstruction, url: () => f.ROUTES.paymentInstruction, body: (s) => f.paymentInstructionBody(s, ext), attr: 'import_supplier' },
  { name: 'account-transfer-status', method: 'GET', path: '/v1/data-import/account-transfer-status/{import_supplier_code}/{external_account_number}/', url: (s) => f.ROUTES.status(s, ext) },
  { name: 'all-account-import-processes', method: 'GET', path: '/v1/data-import/all-account-import-processes/{import_supplier_code}/', url: (s) => f.ROUTES.all(s) },
  { name: 'pending-account-import-processes', method: 'GET', path: '/v1/data-import/pending-account-import-processes/{import_supplier_code}/', url: (s) => f.ROUTES.pending(s) },
  { name: 'imported-account-import-processes', method: 'GET', path: '/v1/data-import/imported-account-import-processes/{import_supplier_code}/', url: (s) => f.ROUTES.imported(s) },
  { name: 'accounts', method: 'GET', path: '/v1/data-import/accounts/{import_supplier_code}/{external_account_number}/', url: (s) => f.ROUTES.account(s, ext) },
];

const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
// Every suite below covers these endpoints: a renamed or missing route fails here, loudly, instead of
// turning the suites into green skips.
test('every endpoint the security suites cover is a documented route', () => {
  const missing = ENDPOINTS.filter((e) => !doc.paths[e.path]?.[e.method.toLowerCase()]).map((e) => `${e.method} ${e.path}`);
  assert.deepEqual(missing, []);
});

/** What the owner's data looks like from the inside: the intruder must change none of it. */
async function ownerFootprint() {
  const db = t.store.db;
  const count = async (table: 'notes' | 'transactions' | 'statements' | 'payment_instructions') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('account_id', '=', imported.accountId).executeTakeFirstOrThrow()).n);
  const imports = await db.selectFrom('account_imports').innerJoin('import_suppliers', 'import_suppliers.id', 'account_imports.supplier_id')
    .select(['account_imports.external_account_number', 'account_imports.account_id', 'account_imports.updated_at'])
    .where('import_suppliers.code', '=', owner.supplier).orderBy('account_imports.id').execute();
  return { notes: await count('notes'), transactions: await count('transactions'), statements: await count('statements'), instructions: await count('payment_instructions'), imports };
}

describe("another organisation's token: the supplier behaves exactly as an unknown one (D3)", () => {
  for (const e of ENDPOINTS) {
    test(`${e.method} ${e.name}`, async () => {
      const before = await ownerFootprint();
      const foreign = await call(t.app, e.method, e.url(owner.supplier), { token: intruder.token, ...(e.body ? { body: e.body(owner.supplier) } : {}) });
      const missing = unique('NOPE');
      const unknown = await call(t.app, e.method, e.url(missing), { token: intruder.token, ...(e.body ? { body: e.body(missing) } : {}) });
      const anonymise = (text: string, code: string) => JSON.parse(text.split(code).join('<supplier>'));
      assert.deepEqual(anonymise(foreign.body, owner.supplier), anonymise(unknown.body, missing), 'a foreign supplier answers like an unknown one');
      if (e.method === 'GET') {
        assert.equal(foreign.status, 404, foreign.body);
        assert.equal(typeof foreign.json.detail, 'string');
      } else {
        assert.equal(foreign.status, 400, foreign.body);
        assert.equal(foreign.json.code, 'import_supplier_not_found');
        assert.deepEqual(foreign.json.errors.map((x: Body) => [x.code, x.attr]), [['import_supplier_not_found', e.attr]]);
      }
      assert.equal(foreign.body.includes(imported.serviceAccountNumber), false, 'the account number is not revealed');
      assert.deepEqual(await ownerFootprint(), before, "the owner's data is untouched");
    });
  }
});

describe('authentication on every endpoint', () => {
  let expired = '';
  before(async () => {
    // A token issued 2.1 s ago, for a second: expired by the app's clock, nothing waits.
    const past = createTestClock();
    past.advance(-2_100);
    const shortLived = await createTokenService({ db: t.store.db, directory: storeDirectory(t.store.db), clock: past },
      { tokenSecret: t.config.tokenSecret, tokenTtlSeconds: 1, refreshTokenTtlSeconds: 1 });
    expired = (await shortLived.obtainWithApiKey(owner.apiKey)).token;
  });

  for (const e of ENDPOINTS) {
    test(`${e.method} ${e.name}: no token, expired token, malformed token`, async () => {
      const body = e.body?.(owner.supplier);
      const none = await call(t.app, e.method, e.url(owner.supplier), body ? { body } : {});
      assert.equal(none.status, 401, none.body);
      assert.deepEqual(Object.keys(none.json).sort(), ['code', 'detail']);
      assert.equal(none.json.code, 'not_authenticated');

      const stale = await call(t.app, e.method, e.url(owner.supplier), { token: expired, ...(body ? { body } : {}) });
      assert.equal(stale.status, 401, stale.body);
      assert.equal(stale.json.code, 'token_expired');

      for (const header of ['Token', 'Token not.a.jwt', `Bearer ${owner.token}`, `Token ${owner.token}x`, `Token ${owner.token.split('.').slice(0, 2).join('.')}.`]) {
        const bad = await call(t.app, e.method, e.url(owner.supplier), { headers: { authorization: header }, ...(body ? { body } : {}) });
        assert.equal(bad.status, 401, `${header}: ${bad.body}`);
        assert.equal(bad.json.code, 'authentication_failed', header);
      }
      // Authentication comes first (D4): garbage from an anonymous caller is a 401, not a parse error.
      if (e.method === 'POST') {
        const garbage = await t.app.inject({ method: 'POST', url: e.url(owner.supplier), headers: { 'content-type': 'application/json' }, payload: '{nope' });
        assert.equal(garbage.statusCode, 401);
      }
    });
  }
});

// Replicas of an array item must not trip the payload's own uniqueness rules (electricity
// identifiers, transaction and statement ids, statement periods), so that "at the maximum" is valid.
const UNIQUE_KEYS = new Set(['identifier', 'transaction_id', 'statement_id', 'serial_number', 'body']);
function replica(item: unknown, i: number, arrayPath: string): unknown {
  if (arrayPath === 'statements') return f.statement(i);
  const copy = structuredClone(item);
  const visit = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        if (UNIQUE_KEYS.has(k) && typeof v === 'string') (node as Body)[k] = `${v.slice(0, 90)}-${i}`;
        else visit(v);
      }
    }
  };
  visit(copy);
  return copy;
}

function withArrayOf(body: Body, path: Array<string | number>, length: number): Body {
  const copy = structuredClone(body);
  const parent = path.slice(0, -1).reduce<any>((node, part) => node[part], copy);
  const key = path[path.length - 1]!;
  const first = parent[key][0];
  parent[key] = Array.from({ length }, (_, i) => (i === 0 ? first : replica(first, i, path.join('.'))));
  return copy;
}

describe('every array at and over its maximum (maxItems from the schemas)', () => {
  for (const e of ENDPOINTS.filter((x) => x.method === 'POST')) {
    test(`${e.name}`, async () => {
      const schema = bodySchemaOf(t.app, 'POST', e.path)!;
      const base = e.body!(owner.supplier);
      const arrays = boundedArrays(schema, base);
      assert.ok(arrays.length > 0 || e.name === 'process' || e.name === 'payment-instruction', 'the body has bounded arrays');
      for (const { path, max } of arrays) {
        const attr = path.join('.');
        const fresh = () => (e.name === 'create-or-update' ? { ...base, external_account_number: unique('EXT') } : base);
        const atMax = await call(t.app, 'POST', e.url(owner.supplier), { token: owner.token, body: withArrayOf(fresh(), path, max) });
        assert.ok(atMax.status < 500 && atMax.status !== 413, `${attr} at ${max}: ${atMax.status} ${atMax.body.slice(0, 300)}`);
        const tooLong = (atMax.json?.errors ?? []).filter((x: Body) => x.attr === attr && x.code === 'max_length');
        assert.deepEqual(tooLong, [], `${attr} at its maximum ${max} is accepted`);
        if (e.name === 'validate-account') assert.equal(atMax.status, 200, `${attr} at ${max}: ${atMax.body.slice(0, 300)}`);

        const over = await call(t.app, 'POST', e.url(owner.supplier), { token: owner.token, body: withArrayOf(fresh(), path, max + 1) });
        assert.equal(over.status, 400, `${attr} at ${max + 1}: ${over.body.slice(0, 300)}`);
        assert.ok(over.json.errors.some((x: Body) => x.attr === attr && x.code === 'max_length'),
          `${attr} over ${max}: ${JSON.stringify(over.json.errors.slice(0, 3))}`);
      }
    });
  }
});

describe('bodies over the size limit', () => {
  for (const e of ENDPOINTS.filter((x) => x.method === 'POST')) {
    test(`${e.name}: one byte over the limit is a JSON 413; exactly at the limit is read`, async () => {
      const limit = t.config.bodyLimitBytes;
      const padded = (size: number) => {
        const text = JSON.stringify(e.body!(owner.supplier));
        return text.slice(0, -1) + ' '.repeat(size - text.length) + '}';
      };
      const over = await t.app.inject({ method: 'POST', url: e.url(owner.supplier), headers: { ...owner.headers, 'content-type': 'application/json' }, payload: padded(limit + 1) });
      assert.equal(over.statusCode, 413, over.body);
      assert.deepEqual(over.json(), { detail: over.json().detail, code: 'payload_too_large' });
      const at = await t.app.inject({ method: 'POST', url: e.url(owner.supplier), headers: { ...owner.headers, 'content-type': 'application/json' }, payload: padded(limit) });
      assert.notEqual(at.statusCode, 413, at.body);
      assert.ok(at.statusCode < 500, at.body);
    });
  }
});
