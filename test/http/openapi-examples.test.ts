import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { API_TITLE } from '../../src/http/openapi.ts';
import { ACCOUNT_DATA_REFUSED, EXAMPLE_ACCOUNT } from '../../src/modules/account-data/index.ts';
import { ALREADY_IMPORTED, STAGED } from '../../src/modules/account-imports/index.ts';
import { EXAMPLE_SERVICE_ACCOUNT_NUMBER } from '../../src/modules/account-data/index.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { seedDemo } from '../../src/modules/admin/index.ts';
import { IMPORT_STATEMENTS } from '../../src/modules/statements/index.ts';
import { EXAMPLE_VENDOR, IMPORT_PAYMENT_INSTRUCTION } from '../../src/modules/payment-instructions/index.ts';
import { TRANSACTION_RESULTS } from '../../src/modules/transactions/index.ts';
import { ENDPOINT, UPDATED_ENDPOINT } from '../../src/modules/webhooks/index.ts';
import { startFakeVendor } from '../support/fake-vendor.ts';
import { buildTestApp, call } from '../support/test-app.ts';

// The OpenAPI document as a contract: every request example, posted in the order of the story it
// tells to a fresh service seeded as `npm start` seeds one, answers the status documented for it,
// so "Try it out" in /docs works against the demo data.
const t = await buildTestApp();
const seed = await seedDemo(t.store.db);
assert.ok(seed, 'a fresh store takes the demo data');
const doc = (await call(t.app, 'GET', '/openapi.json')).json;
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

interface Operation { method: string; path: string; op: any }
const operations: Operation[] = Object.entries<Record<string, any>>(doc.paths)
  .flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, op })));
const byId = new Map(operations.map((o) => [o.op.operationId as string, o]));

// The story of the examples, in order, with the status each example documents. The payment
// instruction needs a vendor, which a fresh service does not have: the service team registers it.
const STORY: Array<[operationId: string, status: number]> = [
  ['obtainToken', 200], ['validateAccount', 200], ['stageAccount', 201], ['createAccount', 201], ['importNotes', 201],
  ['importStatements', 201], ['importTransactions', 201], ['importPaymentInstruction', 201],
  ['createMigrationJob', 201], ['uploadMigrationJobRecords', 200], ['updateMigrationJob', 200], ['createWebhookEndpoint', 201], ['updateWebhookEndpoint', 200],
];

describe('the request examples of the OpenAPI document', () => {
  test('every operation with a request body has an example, and the story posts each of them', () => {
    const withBody = operations.filter((o) => o.op.requestBody).map((o) => o.op.operationId as string).sort();
    assert.deepEqual(withBody, STORY.map(([id]) => id).sort());
    for (const { op } of operations.filter((o) => o.op.requestBody)) {
      for (const [type, media] of Object.entries<any>(op.requestBody.content)) {
        assert.notEqual(media.example, undefined, `${op.operationId} has a request example for ${type}`);
      }
    }
  });

  test('each example, posted to the demo service in turn, answers its documented status', async () => {
    const vendor = await startFakeVendor();
    vendor.set(IMPORT_PAYMENT_INSTRUCTION.reference, 'found');
    await admin.createVendor(t.store.db, EXAMPLE_VENDOR, { kind: 'http', url: vendor.url });

    const answers = new Map<string, { status: number; json: any }>();
    let token = '';
    for (const [operationId, status] of STORY) {
      const { method, path, op } = byId.get(operationId)!;
      assert.ok(op.responses[String(status)], `${operationId} documents ${status}`);
      const [type, media] = Object.entries<any>(op.requestBody.content)[0]!;
      // The token, the documented way: the obtainToken example with the key printed at the first start.
      const example: unknown = operationId === 'obtainToken' ? { ...media.example, variables: { key: seed!.apiKey } } : media.example;
      const url = path.replace('{job_id}', answers.get('createMigrationJob')?.json.id ?? '')
        .replace('{endpoint_id}', answers.get('createWebhookEndpoint')?.json.id ?? '');
      const res: { statusCode: number; body: string; json: () => any } = await t.app.inject({
        method: method.toUpperCase() as 'POST',
        url,
        headers: { 'content-type': type, ...(token ? { authorization: `Token ${token}` } : {}) },
        payload: typeof example === 'string' ? example : JSON.stringify(example),
      });
      answers.set(operationId, { status: res.statusCode, json: res.json() });
      assert.equal(res.statusCode, status, `${operationId}: ${res.body}`);
      if (operationId === 'obtainToken') token = res.json().data.obtainToken.token;
    }

    // The answers are those the document shows, but for the service account number each create draws.
    const number = answers.get('createAccount')!.json.service_account_number as string;
    assert.match(number, /^A-[0-9A-Z]{8}$/);
    assert.deepEqual(answers.get('validateAccount')!.json, EXAMPLE_ACCOUNT);
    assert.deepEqual(answers.get('stageAccount')!.json, STAGED);
    assert.deepEqual(answers.get('importStatements')!.json, IMPORT_STATEMENTS);
    assert.deepEqual(answers.get('importTransactions')!.json, TRANSACTION_RESULTS);
    assert.deepEqual(answers.get('importPaymentInstruction')!.json, { service_account_number: number, reference: IMPORT_PAYMENT_INSTRUCTION.reference });
    // The endpoint's id, secret and creation time are drawn by the service; the rest is the example's.
    const { id: endpointId, secret, created_at: createdAt, ...created } = answers.get('createWebhookEndpoint')!.json;
    const drawn = { id: endpointId, created_at: createdAt };
    assert.match(secret, /^whsec_/);
    assert.deepEqual({ ...created, ...drawn }, { ...ENDPOINT, ...drawn });
    assert.deepEqual(answers.get('updateWebhookEndpoint')!.json, { ...UPDATED_ENDPOINT, ...drawn });

    // And the refusals shown are the service's own.
    const refused = structuredClone(EXAMPLE_ACCOUNT) as any;
    delete refused.billing_address.postal_code;
    refused.customers[0].mobile = '07911 123456';
    const headers = { authorization: `Token ${token}` };
    assert.deepEqual(await call(t.app, 'POST', '/v1/data-import/validate-account/', { body: refused, headers }).then((r) => [r.status, r.json]),
      [400, ACCOUNT_DATA_REFUSED]);
    const again = await call(t.app, 'POST', '/v1/data-import/account-import-process/process/', { body: byId.get('createAccount')!.op.requestBody.content['application/json'].example, headers });
    assert.deepEqual([again.status, JSON.parse(JSON.stringify(again.json).replaceAll(number, EXAMPLE_SERVICE_ACCOUNT_NUMBER))], [400, ALREADY_IMPORTED]);
    const anonymous = await call(t.app, 'GET', '/v1/data-import/events/?import_supplier=DEMO');
    assert.deepEqual([anonymous.status, anonymous.json], [401, byId.get('listEvents')!.op.responses['401'].content['application/json'].example]);
  });
});

describe('the OpenAPI document', () => {
  test('is OpenAPI 3.1 with the service\'s own title, version, licence and server', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual([doc.info.title, doc.info.version], [API_TITLE, pkg.version]);
    assert.ok(doc.info.license.name);
    assert.equal(doc.servers.length, 1);
  });

  test('names every operation, describes every answer and shows an example of every error', () => {
    const ids = operations.map((o) => o.op.operationId as string);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    for (const { method, path, op } of operations) {
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z]+$/, `${method} ${path} has a camelCase operationId`);
      assert.ok(op.description, `${op.operationId} has a description`);
      for (const [status, response] of Object.entries<any>(op.responses)) {
        assert.doesNotMatch(response.description, /^(Default Response|OK|Created|Bad Request|Not Found)$/, `${op.operationId} ${status} says what it means`);
        const media = Object.values<any>(response.content ?? {})[0];
        if (Number(status) >= 400) assert.notEqual(media?.example, undefined, `${op.operationId} ${status} has an example body`);
      }
    }
  });

  test('names its shapes as components, and speaks to API users', () => {
    const names = Object.keys(doc.components.schemas);
    for (const name of ['AccountData', 'Customer', 'ElectricitySupplyPoint', 'HeatPumpSupplyPoint', 'LightSupplyPoint', 'PoleSupplyPoint',
      'WaterHeaterSupplyPoint', 'Meter', 'Transaction', 'Statement', 'Note', 'PaymentInstruction', 'ErrorBody', 'MigrationJob',
      'MigrationJobRecordResult', 'Event', 'SupplierStats', 'Account', 'WebhookEndpoint', 'CreatedWebhookEndpoint', 'WebhookDelivery']) {
      assert.ok(names.includes(name), `${name} is a component`);
    }
    assert.ok(names.every((name) => !/^def-\d+$/.test(name)), 'no generated def-N names');
    const text = JSON.stringify(doc);
    assert.doesNotMatch(text, /\bspec \d|\bD\d{1,2}\b|docs\/|\w\.ts\b|x-rules|x-error-code|"\$id"/, 'no internal references or keywords');
  });

  test('/docs serves the same document, titled with the service and its version', async () => {
    assert.deepEqual((await call(t.app, 'GET', '/docs/json')).json, doc);
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, new RegExp(`<title>${API_TITLE} ${pkg.version.replaceAll('.', '\\.')}</title>`));
  });
});
