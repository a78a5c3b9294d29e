import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// Query strings on every operation the contract documents. An integer is plain decimal digits, else
// 400 invalid at the parameter, never a number: coercion alone read `1e999` as Infinity, which passed
// every bound and reached the database as a 500, and read `1e3`, `0x10` and ` 10` as numbers. A
// parameter the operation does not document is 400 unknown_field, also where the operation takes none.
const t = await buildTestApp();

interface Parameter { name: string; in: string; required?: boolean; schema?: { type?: string; format?: string } }
type Operation = { parameters?: Parameter[] };

const HOSTILE = ['1e999', '-1e999', 'Infinity', '1e3', '0x10', ' 10', '1.5', '10abc'];

interface Document { paths: Record<string, Record<string, Operation>> }

/** Each GET operation of the contract, its path filled in and its required query parameters given. */
async function getOperations(supplier: string): Promise<Array<{ path: string; route: string; required: string[]; operation: Operation }>> {
  const document = (await call(t.app, 'GET', '/openapi.json')).json as Document;
  const valueOf = (parameter: Parameter) => {
    if (parameter.schema?.format === 'uuid') return randomUUID();
    if (parameter.schema?.type === 'integer') return '1';
    return supplier;
  };
  return Object.entries(document.paths).flatMap(([path, operations]) => {
    const operation = operations.get;
    if (!operation) return [];
    const parameters = operation.parameters ?? [];
    const route = path.replace(/\{(\w+)\}/g, (_, name: string) => valueOf(parameters.find((p) => p.name === name)!));
    const required = parameters.filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=${encodeURIComponent(valueOf(p))}`);
    return [{ path, route, required, operation }];
  });
}

test('an integer query parameter is plain decimal digits: anything else is 400 invalid at it, on every operation', async () => {
  const tenant = await createTenant(t);
  const checked: string[] = [];
  for (const { path, route, required, operation } of await getOperations(tenant.supplier)) {
    const integers = (operation.parameters ?? []).filter((p) => p.in === 'query' && p.schema?.type === 'integer');
    for (const parameter of integers) {
      for (const value of HOSTILE) {
        const query = [...required, `${parameter.name}=${encodeURIComponent(value)}`].join('&');
        const res = await call(t.app, 'GET', `${route}?${query}`, { token: tenant.token });
        assert.deepEqual([res.status, res.json], [400, { detail: 'The request failed validation.', code: 'invalid', errors: [
          { detail: 'Expected an integer.', code: 'invalid', attr: parameter.name },
        ] }], `${path}?${parameter.name}=${value}`);
      }
      checked.push(`${path} ${parameter.name}`);
    }
  }
  // The operations the probe found answering 500, among the others.
  for (const expected of ['/v1/data-import/events/ limit', '/v1/data-import/migration-jobs/ page_size', '/v1/data-import/migration-jobs/{job_id}/records/search/ after_line']) {
    assert.ok(checked.includes(expected), `${expected} was checked: ${checked.join(', ')}`);
  }
});

test('a query parameter the operation does not document is 400 unknown_field at it, on every operation, also those that take none', async () => {
  const tenant = await createTenant(t);
  const operations = await getOperations(tenant.supplier);
  for (const { path, route, required } of operations) {
    const res = await call(t.app, 'GET', `${route}?${[...required, 'colour=red'].join('&')}`, { token: tenant.token });
    assert.deepEqual([res.status, res.json], [400, { detail: 'The request failed validation.', code: 'invalid', errors: [
      { detail: 'This field is not part of the documented payload and must not be sent.', code: 'unknown_field', attr: 'colour' },
    ] }], path);
  }
  // Among them, operations that take no query parameter at all.
  for (const path of ['/v1/data-import/migration-jobs/{job_id}/reconciliation/', '/v1/data-import/stats/{import_supplier_code}/']) {
    assert.ok(operations.some((o) => o.path === path && !(o.operation.parameters ?? []).some((p) => p.in === 'query')), path);
  }
});

test('a value of the wrong type is one error at its place, not also an invalid choice: a parameter sent twice, or null for a choice', async () => {
  const tenant = await createTenant(t);
  const created = await call(t.app, 'POST', '/v1/data-import/migration-jobs/', { token: tenant.token,
    body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, on_drift: null } });
  assert.deepEqual([created.status, created.json.errors], [400, [{ detail: 'This field may not be null.', code: 'null', attr: 'on_drift' }]]);

  const job = await call(t.app, 'POST', '/v1/data-import/migration-jobs/', { token: tenant.token,
    body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
  const twice = await call(t.app, 'GET', `/v1/data-import/migration-jobs/${job.json.id}/records/?outcome=failed&outcome=succeeded`, { token: tenant.token });
  assert.deepEqual([twice.status, twice.json.errors], [400, [{ detail: 'Expected a string.', code: 'invalid', attr: 'outcome' }]]);
});
