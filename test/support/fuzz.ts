import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';

// Property-based fuzzing of request bodies, driven by the same schemas that validate them: the
// route's TypeBox schema as the OpenAPI document publishes it (OpenAPI 3.1: JSON Schema, its named
// components referenced with `$ref`). `arbitraryFor` walks the schema into fast-check arbitraries of (mostly) valid
// bodies; `mutated` then breaks them the ways a supplier's script or an attacker would.

type Schema = Record<string, any>;

/** The JSON Schema of a route's request body, from the app's own OpenAPI document. */
export function bodySchemaOf(app: FastifyInstance, method: string, path: string): Schema | undefined {
  const doc = app.swagger() as Schema;
  const operation = doc.paths?.[path]?.[method.toLowerCase()];
  const schema = operation?.requestBody?.content?.['application/json']?.schema;
  return schema ? resolveRefs(schema, doc) : undefined;
}

function resolveRefs(schema: unknown, doc: Schema, seen = 0): any {
  if (seen > 50 || !schema || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map((s) => resolveRefs(s, doc, seen + 1));
  const ref = (schema as Schema).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    const target = ref.slice(2).split('/').reduce<any>((node, part) => node?.[part], doc);
    return resolveRefs(target, doc, seen + 1);
  }
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, resolveRefs(v, doc, seen + 1)]));
}

/** Values that let a fuzzed body reach past validation into the service (the caller's own data). */
export interface FuzzHints { [field: string]: fc.Arbitrary<unknown> }

const date = fc.date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2035-12-31T00:00:00Z'), noInvalidDate: true });
const FORMATS: Record<string, fc.Arbitrary<string>> = {
  date: fc.oneof({ weight: 9, arbitrary: date.map((d) => d.toISOString().slice(0, 10)) }, { weight: 1, arbitrary: fc.constantFrom('2023-02-30', '2023-13-01', '20230101', '') }),
  'utc-date-time': date.map((d) => `${d.toISOString().slice(0, 19)}Z`),
  'date-time': date.map((d) => `${d.toISOString().slice(0, 19)}Z`),
  email: fc.oneof(fc.emailAddress(), fc.constantFrom('', 'not-an-email', 'a@b')),
};
const FIELD_HINTS: FuzzHints = {
  mobile: fc.constantFrom('+447911123456', '+14155552671', '+64211234567', '07911 123456', '+1', ''),
  landline: fc.constantFrom('', '020 7946 0958', '+442079460958', '12', 'abc'),
  phone_number: fc.constantFrom('+447911123456', '020 7946 0958', 'x'),
  country: fc.constantFrom('GB', 'NZ', 'US', 'XX', 'gb', 'GBR'),
  document_path: fc.constantFrom('docs/a.pdf', 'a/b/c.pdf', '/abs.pdf', '../up.pdf', 'a//b.pdf', 'a\\b.pdf'),
  statement_path: fc.constantFrom('statements/1.pdf', '../x.pdf'),
};

export function arbitraryFor(schema: Schema, hints: FuzzHints = {}, key = '', depth = 0): fc.Arbitrary<unknown> {
  if (!schema || typeof schema !== 'object' || depth > 12) return fc.constant(null);
  const hint = hints[key] ?? FIELD_HINTS[key];
  if (hint && (schema.type === 'string' || key in hints)) return hint;
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (branches?.length) {
    const own = { ...schema };
    delete own.oneOf; delete own.anyOf; delete own.discriminator;
    return fc.oneof(...branches.map((b) => arbitraryFor({ ...own, ...b }, hints, key, depth + 1)));
  }
  if (Array.isArray(schema.allOf)) return arbitraryFor(Object.assign({}, ...schema.allOf), hints, key, depth + 1);
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const nullable = schema.nullable === true || types.includes('null');
  const type = types.find((t) => t !== 'null') ?? (schema.properties ? 'object' : undefined);
  const base = typedArbitrary(type, schema, hints, depth);
  return nullable ? fc.oneof({ weight: 4, arbitrary: base }, { weight: 1, arbitrary: fc.constant(null) }) : base;
}

function typedArbitrary(type: string | undefined, schema: Schema, hints: FuzzHints, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const model = Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, arbitraryFor(s, hints, k, depth + 1)]));
      const required = ((schema.required ?? []) as string[]).filter((k) => k in model);
      return fc.record(model, { requiredKeys: required, noNullPrototype: true });
    }
    case 'array': {
      const max = typeof schema.maxItems === 'number' ? schema.maxItems : 3;
      if (max === 0) return fc.constant([]);
      const min = typeof schema.minItems === 'number' ? schema.minItems : 0;
      const items = schema.items ? arbitraryFor(schema.items, hints, '', depth + 1) : fc.jsonValue({ maxDepth: 1 });
      return fc.array(items, { minLength: Math.min(min, 3), maxLength: Math.max(Math.min(max, 3), Math.min(min, 3)) });
    }
    case 'string': {
      const format = FORMATS[schema.format as string];
      if (format) return format;
      const maxLength = Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 40, 40);
      const minLength = Math.min(typeof schema.minLength === 'number' ? schema.minLength : 0, maxLength);
      if (typeof schema.pattern === 'string') {
        try {
          return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= minLength && s.length <= Math.max(maxLength, minLength));
        } catch { /* a pattern JS cannot read: fall through to plain strings */ }
      }
      return fc.oneof(
        fc.string({ minLength, maxLength }),
        fc.string({ minLength, maxLength, unit: 'grapheme' }),
        fc.stringMatching(/^[A-Za-z0-9-]{1,20}$/).filter((s) => s.length >= minLength && s.length <= maxLength),
      );
    }
    case 'integer': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -1_000_000;
      const max = typeof schema.maximum === 'number' ? schema.maximum : 1_000_000;
      return fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) });
    }
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : -1_000_000;
      const max = typeof schema.maximum === 'number' ? schema.maximum : 1_000_000;
      const places = schema['x-decimal-places'];
      if (typeof places === 'number') {
        const scale = 10 ** places;
        return fc.integer({ min: Math.ceil(Math.max(min, -1e9) * scale), max: Math.floor(Math.min(max, 1e9) * scale) }).map((n) => n / scale);
      }
      return fc.double({ min: Math.max(min, -1e9), max: Math.min(max, 1e9), noNaN: true, noDefaultInfinity: true });
    }
    case 'boolean':
      return fc.boolean();
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// Mutations. `DEEP` marks a place where the serialiser writes nesting deeper than JSON.stringify
// could handle itself (see serialise).
const DEEP = '\u0000deep:';
const NASTY_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'ключ', '\u0000', 'a.b', '0'];
/** Strings PostgreSQL cannot store: NUL (text and jsonb) and unpaired surrogates (jsonb). */
export const UNSTORABLE_STRINGS = ['\u0000', 'a\u0000b', '\ud800', '\udfff'];
const NASTY_STRINGS = [
  '', ' ', '\u202e\u0301', '😀'.repeat(50), '\r\n\t', '<script>alert(1)</script>',
  "'; DROP TABLE accounts; --", '%s%n%x', '../../etc/passwd', '1e309', 'NaN', 'null', 'true', '-0', '٣', 'ﷺ'.repeat(20),
];
const WRONG_TYPES: unknown[] = [0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, true, false, '', 'x', [], {}, [null], { a: 1 }, '2023-01-01', '12'];

type Path = Array<string | number>;

function paths(value: unknown, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...at, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) paths(v, [...at, k], out);
  return out;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty, so that "__proto__" becomes an own, serialised key and not the prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export interface MutationOptions {
  /** Put UNSTORABLE_STRINGS among the replacement values too. */
  unstorableStrings?: boolean;
}

const mutationOf = (options: MutationOptions) => fc.oneof(
  fc.constant({ kind: 'drop' as const }),
  fc.constant({ kind: 'null' as const }),
  fc.constantFrom(...WRONG_TYPES).map((v) => ({ kind: 'replace' as const, value: v })),
  fc.constant({ kind: 'stringify' as const }),
  fc.record({ key: fc.oneof(fc.constantFrom(...NASTY_KEYS), fc.string({ maxLength: 10 })), value: fc.jsonValue({ maxDepth: 2 }) })
    .map((x) => ({ kind: 'extra' as const, ...x })),
  fc.constantFrom(...NASTY_STRINGS, ...(options.unstorableStrings ? UNSTORABLE_STRINGS : [])).map((v) => ({ kind: 'replace' as const, value: v })),
  fc.integer({ min: 1_000, max: 300_000 }).map((n) => ({ kind: 'replace' as const, value: 'x'.repeat(n) })),
  // Nesting to 1,000 levels here; deeper bodies are a test of their own (see deepBody).
  fc.integer({ min: 20, max: 1_000 }).map((n) => ({ kind: 'replace' as const, value: `${DEEP}${n}` })),
  fc.integer({ min: 2, max: 400 }).map((n) => ({ kind: 'grow' as const, times: n })),
);
export type Mutation = ReturnType<typeof mutationOf> extends fc.Arbitrary<infer M> ? M : never;

function applyMutation(root: unknown, pick: number, m: Mutation): unknown {
  const all = paths(root);
  const path = all[pick % all.length]!;
  if (path.length === 0) {
    if (m.kind === 'extra' && root && typeof root === 'object' && !Array.isArray(root)) {
      setOwn(root as Record<string, unknown>, m.key, m.value);
      return root;
    }
    return m.kind === 'replace' ? m.value : m.kind === 'null' || m.kind === 'drop' ? null : root;
  }
  const parent = path.slice(0, -1).reduce<any>((node, part) => node[part], root);
  const last = path[path.length - 1]!;
  const current = parent[last];
  switch (m.kind) {
    case 'drop':
      if (Array.isArray(parent)) parent.splice(Number(last), 1); else delete parent[last];
      break;
    case 'null': parent[last] = null; break;
    case 'replace': parent[last] = m.value; break;
    case 'stringify': parent[last] = typeof current === 'string' && current !== '' && !Number.isNaN(Number(current)) ? Number(current) : JSON.stringify(current) ?? 'undefined'; break;
    case 'extra':
      if (current && typeof current === 'object' && !Array.isArray(current)) setOwn(current, m.key, m.value);
      else setOwn(parent, m.key, m.value);
      break;
    case 'grow':
      if (Array.isArray(current) && current.length > 0) parent[last] = Array.from({ length: m.times }, (_, i) => current[i % current.length]);
      else parent[last] = Array.from({ length: m.times }, () => current);
      break;
  }
  return root;
}

/**
 * A valid-ish body broken by one to three mutations at random places. A step that would make the
 * body larger than `maxChars` (grown arrays of huge strings multiply) is left out: such bodies only
 * test the size limit, which has tests of its own, and would exhaust the test process's memory.
 */
export function mutated(valid: fc.Arbitrary<unknown>, options: MutationOptions = {}, maxChars = 2_000_000): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.array(fc.tuple(fc.nat(), mutationOf(options)), { minLength: 1, maxLength: 3 }))
    .map(([value, steps]) => steps.reduce((v, [pick, m]) => {
      const next = applyMutation(structuredClone(v), pick, m);
      return sizeAtMost(next, maxChars) ? next : v;
    }, structuredClone(value) as unknown));
}

/** Whether the JSON text of `value` stays under `limit` characters (roughly; stops counting early). */
function sizeAtMost(value: unknown, limit: number): boolean {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node === 'string') size += node.length + 2;
    else if (Array.isArray(node)) { size += node.length + 2; stack.push(...node); }
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) { size += k.length + 4; stack.push(v); }
    } else size += 8;
    if (size > limit) return false;
  }
  return true;
}

/** JSON nested `depth` levels deep: arrays when even, objects when odd. */
export function deepBody(depth: number): string {
  return depth % 2 === 0 ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** JSON text of a generated body; `DEEP` markers become deeply nested arrays and objects. */
export function serialise(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.replace(/"\\u0000deep:(\d+)"/g, (_, n: string) => deepBody(Number(n)));
}

export const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/JSON',
  'text/plain', 'text/html', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
  'application/octet-stream', 'application/vnd.api+json', 'application/json, text/plain', '', ';;;', undefined,
] as const;

/** Bodies that are not JSON documents of the right shape at all, with arbitrary content types. */
export const rawBodies = fc.record({
  body: fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.string({ maxLength: 200, unit: 'binary' }),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    fc.constantFrom('', 'null', 'true', '0', '-1', '1e999', '"text"', '[]', '{}', '[{}]', '{"a":', '{"a":1,}', "{'a':1}",
      '{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}', '\ufeff{}', '{"a":1}{"b":2}',
      '[' + '1,'.repeat(5000) + '1]', '"' + '\\u0000'.repeat(100) + '"', '{"a":"\\ud800"}'),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  ),
  contentType: fc.constantFrom(...CONTENT_TYPES),
});

/** Why an answer breaks D4 (never a 5xx; always JSON with detail and code; well-formed items), or null. */
export function errorShapeProblem(status: number, contentType: string | undefined, body: string): string | null {
  if (status >= 500) return `status ${status}: ${body.slice(0, 300)}`;
  if (!/^application\/json/.test(contentType ?? '')) return `content-type ${contentType} for status ${status}`;
  let json: any;
  try { json = JSON.parse(body); } catch { return `body is not JSON: ${body.slice(0, 200)}`; }
  if (status < 400) return null;
  if (!json || typeof json !== 'object' || Array.isArray(json)) return `error body is not an object: ${body.slice(0, 200)}`;
  if (typeof json.detail !== 'string' || typeof json.code !== 'string') return `error body lacks detail/code: ${body.slice(0, 200)}`;
  if (json.errors !== undefined) {
    if (!Array.isArray(json.errors)) return `errors is not an array: ${body.slice(0, 200)}`;
    const bad = json.errors.find((e: any) => !e || typeof e.detail !== 'string' || typeof e.code !== 'string' || typeof e.attr !== 'string');
    if (bad) return `malformed errors item ${JSON.stringify(bad)}`;
  }
  return null;
}

/**
 * Every array present in `value` whose schema sets a positive maxItems, with its path: one per
 * place in the schema (the first item that has it), so items of every union branch are covered.
 */
export function boundedArrays(schema: Schema, value: unknown): Array<{ path: Array<string | number>; max: number }> {
  const seen = new Set<string>();
  return arraysIn(schema, value).filter(({ path }) => {
    const key = path.map((p) => (typeof p === 'number' ? '*' : p)).join('.');
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

function arraysIn(schema: Schema, value: unknown, path: Array<string | number> = []): Array<{ path: Array<string | number>; max: number }> {
  if (!schema || typeof schema !== 'object') return [];
  const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (branches?.length) {
    // The branch whose constant fields (a discriminator such as supply_type) match the value.
    const fits = (b: Schema) => Object.entries((b.properties ?? {}) as Record<string, Schema>)
      .every(([k, s]) => {
        const only = 'const' in s ? s.const : Array.isArray(s.enum) && s.enum.length === 1 ? s.enum[0] : undefined;
        return only === undefined || (value as Record<string, unknown>)?.[k] === only;
      });
    const branch = branches.find(fits);
    return branch ? arraysIn(branch, value, path) : [];
  }
  const out: Array<{ path: Array<string | number>; max: number }> = [];
  if (Array.isArray(value)) {
    if (typeof schema.maxItems === 'number' && schema.maxItems > 0) out.push({ path, max: schema.maxItems });
    if (schema.items) value.forEach((item, i) => out.push(...arraysIn(schema.items, item, [...path, i])));
  } else if (value && typeof value === 'object' && schema.properties) {
    for (const [k, v] of Object.entries(value)) {
      const child = (schema.properties as Record<string, Schema>)[k];
      if (child) out.push(...arraysIn(child, v, [...path, k]));
    }
  }
  return out;
}
