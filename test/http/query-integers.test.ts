import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// Every integer a query string carries, on every operation the contract documents: text that is not
// plain decimal digits is 400 invalid at the parameter, never a number. Coercion alone read `1e999`
// as Infinity, which passed every bound and reached the database as a 500; it also read `1e3`, `0x10`
// and ` 10` as numbers.
const t = await buildTestApp();

interface Parameter { name: string; in: string; required?: boolean; schema?: { type?: string; format?: string } }
type Operation = { parameters?: Parameter[] };

const HOSTILE = ['1e999', '-1e999', 'Infinity', '1e3', '0x10', ' 10', '1.5', '10abc'];

test('an integer query parameter is plain decimal digits: anything else is 400 invalid at it, on every operation', async () => {
  const tenant = await createTenant(t);
  const document = (await call(t.app, 'GET', '/openapi.json')).json as { paths: Record<string, Record<string, Operation>> };
  const valueOf = (parameter: Parameter) => {
    if (parameter.schema?.format === 'uuid') return randomUUID();
    if (parameter.schema?.type === 'integer') return '1';
    return tenant.supplier;
  };
  const checked: string[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    const get = operations.get;
    const integers = (get?.parameters ?? []).filter((p) => p.in === 'query' && p.schema?.type === 'integer');
    if (!get || integers.length === 0) continue;
    const route = path.replace(/\{(\w+)\}/g, (_, name: string) => valueOf(get.parameters!.find((p) => p.name === name)!));
    const required = get.parameters!.filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=${encodeURIComponent(valueOf(p))}`);
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
