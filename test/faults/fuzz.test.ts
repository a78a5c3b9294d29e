import fc from 'fast-check';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { insertImportedAccount, insertStagedOnly } from '../support/accounts.ts';
import { arbitraryFor, bodySchemaOf, deepBody, errorShapeProblem, mutated, rawBodies, serialise, type FuzzHints } from '../support/fuzz.ts';
import { buildTestApp, createTenant } from '../support/test-app.ts';
import * as f from './fixtures.ts';

const { ROUTES } = f;

// D4: "No input, however malformed, produces a 5xx or a non-JSON body." Every write endpoint is
// fuzzed with bodies generated from its own schema (as published in the OpenAPI document), the same
// bodies mutated (fields dropped, wrong types, nulls, extra and prototype keys, huge strings, deep
// nesting, odd unicode, numbers as strings, arrays grown), and raw garbage under random content
// types. FUZZ_RUNS scales the number of cases (default: ~3,000 in all); FUZZ_SEED replays a run.
const t = await buildTestApp();
const tenant = await createTenant(t);
const imported = await insertImportedAccount(t, tenant);
const staged = await insertStagedOnly(t, tenant);
await t.app.ready();

const scale = Number(process.env.FUZZ_RUNS ?? 1);
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
const runs = (n: number) => Math.max(1, Math.round(n * scale));

// Most generated bodies name the caller's own supplier, account and team, so that they get past
// the supplier check into the services; the rest are random.
const supplierCode = fc.oneof({ weight: 8, arbitrary: fc.constant(tenant.supplier) }, { weight: 1, arbitrary: fc.string({ maxLength: 30 }) });
const hints: FuzzHints = {
  import_supplier: supplierCode,
  import_supplier_code: supplierCode,
  external_account_number: fc.oneof(
    { weight: 4, arbitrary: fc.constant(imported.externalAccountNumber) },
    { weight: 2, arbitrary: fc.constant(staged) },
    { weight: 1, arbitrary: fc.stringMatching(/^EXT-[A-Z0-9]{1,12}$/) },
  ),
  operations_team_name: fc.oneof({ weight: 4, arbitrary: fc.constant(tenant.team) }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) }),
};


const QUERIES = ['', '', '', '?check_previously_added=false', '?force_add_to_current_statement=0', '?check_previously_added=maybe',
  '?force_add_to_current_statement[]=1', '?check_previously_added=true&check_previously_added=false', '?unknown=1', '?%zz'];

const ENDPOINTS: Array<{ name: string; url: string; queries?: string[] }> = [
  { name: 'validate-account', url: ROUTES.validate },
  { name: 'create-or-update', url: ROUTES.stage },
  { name: 'process', url: ROUTES.process },
  { name: 'notes', url: ROUTES.notes },
  { name: 'transactions', url: ROUTES.transactions, queries: QUERIES },
  { name: 'historical-statements', url: ROUTES.statements },
  { name: 'payment-instruction', url: ROUTES.paymentInstruction },
];

async function send(url: string, payload: string | Buffer, contentType: string | undefined): Promise<string | null> {
  const res = await t.app.inject({
    method: 'POST',
    url,
    headers: { ...tenant.headers, ...(contentType !== undefined ? { 'content-type': contentType } : {}) },
    payload,
  });
  const problem = errorShapeProblem(res.statusCode, res.headers['content-type'] as string | undefined, res.body);
  return problem && `${problem}\n  request: ${url} ${contentType} ${String(payload).slice(0, 500)}`;
}

async function check(property: fc.IAsyncProperty<any>, numRuns: number): Promise<void> {
  await fc.assert(property, { numRuns, ...(seed !== undefined ? { seed } : {}), endOnFailure: true });
}

describe('fuzzing every write endpoint: never a 5xx, always the D4 error shape', () => {
  for (const endpoint of ENDPOINTS) {
    const schema = bodySchemaOf(t.app, 'POST', endpoint.url);
    const query = fc.constantFrom(...(endpoint.queries ?? ['']));

    test(`${endpoint.name}: bodies generated from its schema`, async () => {
      assert.ok(schema, `POST ${endpoint.url} has no body schema in the OpenAPI document`);
      const valid = arbitraryFor(schema!, hints);
      await check(fc.asyncProperty(valid, query, async (body, q) => {
        const problem = await send(endpoint.url + q, serialise(body), 'application/json');
        assert.equal(problem, null);
      }), runs(80));
    });

    test(`${endpoint.name}: mutated bodies (missing, wrong, null, extra, huge, deep, unicode)`, async () => {
      assert.ok(schema, `POST ${endpoint.url} has no body schema in the OpenAPI document`);
      const broken = mutated(arbitraryFor(schema!, hints), { unstorableStrings: true });
      await check(fc.asyncProperty(broken, query, async (body, q) => {
        const problem = await send(endpoint.url + q, serialise(body), 'application/json');
        assert.equal(problem, null);
      }), runs(250));
    });

    test(`${endpoint.name}: raw garbage under random content types`, async () => {
      await check(fc.asyncProperty(rawBodies, query, async ({ body, contentType }, q) => {
        const problem = await send(endpoint.url + q, body, contentType);
        assert.equal(problem, null);
      }), runs(90));
    });
  }
});

// Found by the fuzzing above: a body nested a few thousand objects deep overflows the stack in
// validation.ts (sortByDocumentOrder's recursive walk) and answers 500 (from ~2,400 levels in a test
// process). Kept out of the random mutations (at most 1,000 levels there) and pinned here until fixed.

describe('deeply nested bodies', () => {
  for (const endpoint of ENDPOINTS) {
    test(`${endpoint.name}: 50,000 nested arrays and 10,000 nested objects, at the root and in a field`, async () => {
      const field = endpoint.name === 'process' ? 'import_supplier_code' : 'import_supplier';
      for (const payload of [deepBody(50_000), deepBody(10_001), `{"${field}":${deepBody(10_001)}}`, `{"extra":${deepBody(10_001)}}`]) {
        assert.equal(await send(endpoint.url, payload, 'application/json'), null);
      }
    });
  }
});

// Strings PostgreSQL cannot store (NUL) or that are not well-formed UTF-16 (a lone surrogate), put
// in every string field of a valid body one at a time: a 400 at that field, or stored, never a 500.
const VALID_BODIES: Record<string, () => Record<string, any>> = {
  'validate-account': () => f.accountPayload(tenant.supplier),
  'create-or-update': () => f.accountPayload(tenant.supplier),
  process: () => f.processBody(tenant.supplier, staged, tenant.team),
  notes: () => f.notesBody(tenant.supplier, imported.externalAccountNumber),
  transactions: () => f.transactionsBody(tenant.supplier, imported.externalAccountNumber, [f.transaction(), f.supplyCharge()]),
  'historical-statements': () => f.statementsBody(tenant.supplier, imported.externalAccountNumber, [f.statement(700)]),
  'payment-instruction': () => f.paymentInstructionBody(tenant.supplier, imported.externalAccountNumber),
};

function stringLeaves(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value === 'string') return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringLeaves(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringLeaves(v, [...path, k]));
  return [];
}

describe('NUL, lone surrogates and control characters in every string field', () => {
  for (const endpoint of ENDPOINTS) {
    test(endpoint.name, async () => {
      assert.ok(bodySchemaOf(t.app, 'POST', endpoint.url), `POST ${endpoint.url} has no body schema in the OpenAPI document`);
      const problems: string[] = [];
      for (const leaf of stringLeaves(VALID_BODIES[endpoint.name]!())) {
        for (const nasty of ['a\u0000b', '\ud800', 'x\u001b[31m\u0007']) {
          const body = VALID_BODIES[endpoint.name]!();
          const parent = leaf.slice(0, -1).reduce<any>((node, part) => node[part], body);
          parent[leaf[leaf.length - 1]!] = nasty;
          const problem = await send(endpoint.url, JSON.stringify(body), 'application/json');
          if (problem) problems.push(`${leaf.join('.')} = ${JSON.stringify(nasty)}: ${problem.split('\n')[0]}`);
        }
      }
      assert.deepEqual(problems, []);
    });
  }
});
