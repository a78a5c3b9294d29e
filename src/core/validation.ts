import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { dayNumber, isRealDate } from './dates.ts';
import { AppError, type ErrorCode, type FieldError } from './errors.ts';
import { decimalPlacesOf, INEXACT_NUMBER_DETAIL, inexactNumbersOf } from './json-numbers.ts';

// The one validator of the service. Request bodies are validated strictly: no type coercion, no
// removal of undocumented fields (each is an `unknown_field`), every error collected. Each Ajv
// keyword maps to a stable code of Django REST framework's vocabulary (D4).
//
// Schema conventions understood here:
// - `x-error-code` on a root schema: the top-level code of a failure (default `invalid`).
// - `x-rules: NAME` on any object: runs the cross-field rule set registered under NAME (see
//   registerRules); it receives the value even when other parts failed, so it must be defensive.
// - `x-decimal-places: N` on a number: at most N decimals, counted on the text that was sent when
//   the parse changed the number (json-numbers.ts), else on the number's shortest text.
// - `format` values map to domain codes through FORMAT_CODES.
// - `maxItems: 0` marks an array whose item shape is undocumented: a non-empty one is `not_supported`.
// - Unions are `oneOf` with a `discriminator` (errors come from the chosen branch only); nullable
//   fields use `type: [T, 'null']`, never anyOf.

const addFormats = addFormatsModule as unknown as (ajv: Ajv, formats: string[]) => Ajv;

export type RuleCheck = (value: unknown) => Array<{ path: string; code: string; detail: string }>;
const rules = new Map<string, RuleCheck>();

/** Registers a named cross-field rule set; `path` in its results is relative, dot form, '' for the object. */
export function registerRules(name: string, check: RuleCheck): void {
  rules.set(name, check);
}

/** `to` must not be before `from` (both YYYY-MM-DD strings): `invalid_date_range` at `to`. */
export function dateRangeRule(from: string, to: string): RuleCheck {
  return (value) => {
    const item = value as Record<string, unknown> | null;
    const start = item?.[from];
    const end = item?.[to];
    return isRealDate(start) && isRealDate(end) && dayNumber(end) < dayNumber(start)
      ? [{ path: to, code: 'invalid_date_range', detail: `${to} must not be before ${from}.` }]
      : [];
  };
}

/** A key may appear once among the items of `arrayField`: `duplicate` at each repeat. */
export function uniqueItemsRule(arrayField: string, keyField: string): RuleCheck {
  return (value) => {
    const items = (value as Record<string, unknown> | null)?.[arrayField];
    if (!Array.isArray(items)) return [];
    const seen = new Set<string>();
    return items.flatMap((item, index) => {
      const key = (item as Record<string, unknown> | null)?.[keyField];
      if (typeof key !== 'string') return [];
      const repeat = seen.has(key);
      seen.add(key);
      return repeat ? [{ path: `${arrayField}.${index}.${keyField}`, code: 'duplicate', detail: `This ${keyField} appears earlier in the request.` }] : [];
    });
  };
}

const FORMAT_CODES: Record<string, { code: string; detail: string }> = {
  date: { code: 'invalid', detail: 'Date has wrong format or is not a real date. Use YYYY-MM-DD.' },
  'utc-date-time': { code: 'invalid', detail: 'Datetime has wrong format. Use YYYY-MM-DDTHH:MM:SSZ (UTC).' },
  email: { code: 'invalid_email', detail: 'Enter a valid email address.' },
};

export function createAjv(options: { coerce: boolean }): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: options.coerce,
    removeAdditional: false,
    useDefaults: false,
    discriminator: true,
    verbose: true,
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
  });
  addFormats(ajv, ['date', 'email']);
  // Integer widths, for the OpenAPI document: each such integer also has the minimum and maximum
  // that enforce the width, so the format itself checks nothing (one error per problem).
  for (const width of ['int32', 'int64']) ajv.addFormat(width, { type: 'number', validate: () => true });
  // UTC only, with Z, whole seconds or a fraction (spec 2.1, D5).
  ajv.addFormat('utc-date-time', {
    type: 'string',
    validate: (value: string) =>
      /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/.test(value) && isRealDateTime(value),
  });
  ajv.addVocabulary(['x-error-code', 'x-attr-name']);
  ajv.addKeyword({
    keyword: 'x-decimal-places',
    type: 'number',
    schemaType: 'number',
    errors: false,
    validate: (places: number, value: number, _schema: unknown, ctx?: { instancePath: string; rootData: unknown }) => {
      const sent = ctx ? inexactNumbersOf(ctx.rootData)?.get(attrOf(pathOf(ctx.instancePath))) : undefined;
      return (sent === undefined ? decimalPlaces(value) : decimalPlacesOf(sent)) <= places;
    },
  });
  ajv.addKeyword({
    keyword: 'x-rules',
    schemaType: 'string',
    errors: true,
    validate: function check(name: string, value: unknown, _schema: unknown, ctx?: { instancePath: string }) {
      const ruleSet = rules.get(name);
      if (!ruleSet) throw new Error(`no rule set named ${name}`);
      const found = ruleSet(value);
      (check as unknown as { errors: Partial<ErrorObject>[] }).errors = found.map((f) => ({
        keyword: 'x-rules',
        instancePath: `${ctx?.instancePath ?? ''}${f.path ? `/${f.path.split('.').join('/')}` : ''}`,
        params: { code: f.code },
        message: f.detail,
      }));
      return found.length === 0;
    },
  });
  return ajv;
}

function isRealDateTime(value: string): boolean {
  const date = new Date(value);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 19) === value.slice(0, 19);
}

function decimalPlaces(value: number): number {
  if (!Number.isFinite(value)) return Infinity;
  const text = String(value);
  const exp = text.match(/e([+-]\d+)$/);
  const mantissa = exp ? text.slice(0, exp.index) : text;
  const decimals = mantissa.includes('.') ? mantissa.split('.')[1]!.length : 0;
  return Math.max(0, decimals - (exp ? Number(exp[1]) : 0));
}

export const bodyAjv = createAjv({ coerce: false });
export const queryAjv = createAjv({ coerce: true });

const compiled = new WeakMap<object, ValidateFunction>();

export type Validator = (data: unknown) => FieldError[] | null;

/** Compiles a schema once; the result returns null when valid or the field errors in document order. */
export function compileValidator(schema: object, ajv: Ajv = bodyAjv): Validator {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(withoutIds(schema));
    compiled.set(schema, validate);
  }
  const fn = validate;
  return (data) => {
    const unstorable = findUnstorableText(data);
    const inexact = inexactNumbersOf(data);
    if (fn(data) && unstorable.length === 0 && inexact === undefined) return null;
    const errors = [...toFieldErrors(fn.errors ?? [], data), ...unstorable];
    return sortByDocumentOrder([...errors, ...inexactNumberErrors(inexact, errors)], data);
  };
}

/**
 * `$id` names a schema for the OpenAPI document only (a component there). Ajv would register each
 * name and refuse the same named schema twice in one body or across bodies, so it never sees them.
 */
function withoutIds(schema: object): object {
  return JSON.parse(JSON.stringify(schema, (key, value: unknown) => (key === '$id' ? undefined : value))) as object;
}

/** A number the parse changed, at a field nothing else already refused (one reason is enough). */
function inexactNumberErrors(inexact: ReadonlyMap<string, string> | undefined, errors: FieldError[]): FieldError[] {
  if (!inexact) return [];
  const refused = new Set(errors.map((e) => e.attr));
  return [...inexact.keys()].filter((attr) => !refused.has(attr)).map((attr) => ({
    code: 'invalid', attr, detail: INEXACT_NUMBER_DETAIL,
  }));
}

/**
 * PostgreSQL cannot store a NUL character in text or jsonb, nor an unpaired UTF-16 surrogate in
 * jsonb. JSON can carry both, so every string and key of a body (free-form values included) is
 * checked here, once, instead of failing at the store. The walk is iterative: bodies nest freely.
 */
// Runs on every body: plain loops, no closures made per value (tsx's keepNames wraps each one).
export function findUnstorableText(data: unknown): FieldError[] {
  const found: FieldError[] = [];
  const stack: Array<[unknown, string]> = [[data, '']];
  while (stack.length > 0 && found.length < 100) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (isUnstorable(value)) found.push({ code: 'invalid', detail: 'Text must not contain NUL characters or unpaired surrogates.', attr: path || 'non_field_errors' });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i -= 1) stack.push([value[i], joinPath(path, String(i))]);
    } else if (value && typeof value === 'object') {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i -= 1) {
        const key = keys[i]!;
        // eslint-disable-next-line no-control-regex -- NUL is the character being replaced
        if (isUnstorable(key)) found.push({ code: 'invalid', detail: 'Field names must not contain NUL characters or unpaired surrogates.', attr: joinPath(path, key.replace(/[\u0000\ud800-\udfff]/g, '?')) });
        else stack.push([(value as Record<string, unknown>)[key], joinPath(path, key)]);
      }
    }
  }
  return found;
}

function isUnstorable(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}

function joinPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** The top-level code a schema's failures carry (`x-error-code`, default `invalid`). */
export function errorCodeOf(schema: object): ErrorCode {
  return ((schema as Record<string, unknown>)['x-error-code'] as ErrorCode | undefined) ?? 'invalid';
}

export function validationError(code: ErrorCode, errors: FieldError[]): AppError {
  const detail = code === 'account_failed_validation'
    ? 'The account data failed validation.'
    : 'The request failed validation.';
  return new AppError(code, detail, { errors });
}

function pathOf(instancePath: string): string[] {
  if (instancePath === '') return [];
  return instancePath.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function attrOf(parts: string[]): string {
  return parts.length === 0 ? 'non_field_errors' : parts.join('.');
}

function toFieldError(e: ErrorObject): FieldError | null {
  const path = pathOf(e.instancePath);
  const params = e.params as Record<string, unknown>;
  const schema = e.schema as unknown;
  switch (e.keyword) {
    case 'required':
      return { code: 'required', detail: 'This field is required.', attr: attrOf([...path, String(params.missingProperty)]) };
    case 'additionalProperties':
      return {
        code: 'unknown_field',
        detail: 'This field is not part of the documented payload and must not be sent.',
        attr: attrOf([...path, String(params.additionalProperty)]),
      };
    case 'type':
      return e.data === null
        ? { code: 'null', detail: 'This field may not be null.', attr: attrOf(path) }
        : { code: 'invalid', detail: `Expected ${describeType(params.type)}.`, attr: attrOf(path) };
    case 'enum':
    case 'const': {
      const allowed = (e.keyword === 'enum' ? (schema as unknown[]) : [schema]).map(String).join(', ');
      return { code: 'invalid_choice', detail: `"${String(e.data)}" is not a valid choice. Allowed: ${allowed}.`, attr: attrOf(path) };
    }
    case 'maxLength':
      return { code: 'max_length', detail: `Ensure this field has no more than ${String(schema)} characters.`, attr: attrOf(path) };
    case 'minLength':
      return e.data === ''
        ? { code: 'blank', detail: 'This field may not be blank.', attr: attrOf(path) }
        : { code: 'min_length', detail: `Ensure this field has at least ${String(schema)} characters.`, attr: attrOf(path) };
    case 'maximum':
    case 'exclusiveMaximum':
      return { code: 'max_value', detail: `Ensure this value is ${e.keyword === 'maximum' ? 'less than or equal to' : 'less than'} ${String(schema)}.`, attr: attrOf(path) };
    case 'minimum':
    case 'exclusiveMinimum':
      return { code: 'min_value', detail: `Ensure this value is ${e.keyword === 'minimum' ? 'greater than or equal to' : 'greater than'} ${String(schema)}.`, attr: attrOf(path) };
    case 'maxItems':
      return schema === 0
        ? { code: 'not_supported', detail: 'Items of this array are not supported; send it empty or omit it.', attr: attrOf(path) }
        : { code: 'max_length', detail: `Ensure this field has no more than ${String(schema)} items.`, attr: attrOf(path) };
    case 'minItems':
      return Array.isArray(e.data) && e.data.length === 0
        ? { code: 'empty', detail: 'This list may not be empty.', attr: attrOf(path) }
        : { code: 'min_length', detail: `Ensure this field has at least ${String(schema)} items.`, attr: attrOf(path) };
    case 'uniqueItems':
      return { code: 'duplicate', detail: 'Items of this list must be unique.', attr: attrOf(path) };
    case 'format': {
      const mapped = FORMAT_CODES[String(params.format)] ?? { code: 'invalid', detail: 'Invalid format.' };
      return { ...mapped, attr: attrOf(path) };
    }
    case 'pattern':
      return { code: 'invalid', detail: 'This value has an invalid format.', attr: attrOf(path) };
    case 'x-decimal-places':
      return { code: 'invalid', detail: `Ensure that there are no more than ${String(schema)} decimal places.`, attr: attrOf(path) };
    case 'discriminator': {
      const tag = String(params.tag);
      return params.error === 'mapping'
        ? { code: 'invalid_choice', detail: `"${String((e.data as Record<string, unknown>)?.[tag])}" is not a valid choice.`, attr: attrOf([...path, tag]) }
        : e.data && typeof e.data === 'object' && tag in e.data
          ? { code: 'invalid', detail: 'Expected a string.', attr: attrOf([...path, tag]) }
          : { code: 'required', detail: 'This field is required.', attr: attrOf([...path, tag]) };
    }
    case 'x-rules':
      return { code: String(params.code), detail: e.message ?? 'Invalid.', attr: attrOf(path) };
    case 'oneOf':
    case 'anyOf':
    case 'if':
      return null; // the branch errors already say what is wrong
    default:
      return { code: 'invalid', detail: e.message ?? 'Invalid value.', attr: attrOf(path) };
  }
}

function describeType(type: unknown): string {
  const names: Record<string, string> = { string: 'a string', integer: 'an integer', number: 'a number', boolean: 'a boolean', array: 'a list', object: 'an object', null: 'null' };
  const list = Array.isArray(type) ? type : String(type).split(',');
  return list.map((t) => names[String(t)] ?? String(t)).join(' or ');
}

/** Maps Ajv errors to field errors, without duplicates, in the order their fields appear in the input. */
export function toFieldErrors(errors: ErrorObject[], data: unknown): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const item = toFieldError(e);
    if (!item) continue;
    const key = `${item.attr}\u0000${item.code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(item);
  }
  return sortByDocumentOrder(out, data);
}

/**
 * Document order: a field present in the input sorts by its position in a pre-order walk; a missing
 * field sorts after everything its nearest present ancestor contains. Ties keep the validator's order.
 */
export function sortByDocumentOrder(items: FieldError[], data: unknown): FieldError[] {
  if (items.length < 2) return items;
  const start = new Map<string, number>();
  const end = new Map<string, number>();
  let counter = 0;
  // Errors point no deeper than the schema goes, so the walk stops there: free-form values (metadata)
  // may nest arbitrarily deep and must not cost a deep recursion.
  const depth = Math.max(...items.map((item) => item.attr.split('.').length));
  const walk = (value: unknown, path: string, level: number) => {
    start.set(path, counter++);
    if (level < depth) {
      if (Array.isArray(value)) value.forEach((v, i) => walk(v, path ? `${path}.${i}` : String(i), level + 1));
      else if (value && typeof value === 'object') {
        for (const [k, v] of Object.entries(value)) walk(v, path ? `${path}.${k}` : k, level + 1);
      }
    }
    end.set(path, counter - 1);
  };
  walk(data, '', 0);
  const keyOf = (attr: string): number => {
    if (attr === 'non_field_errors') return -1;
    if (start.has(attr)) return start.get(attr)!;
    const parts = attr.split('.');
    while (parts.length > 0) {
      parts.pop();
      const parent = parts.join('.');
      if (end.has(parent)) return end.get(parent)! + 0.5;
    }
    return counter;
  };
  return items
    .map((item, index) => ({ item, index, key: keyOf(item.attr) }))
    .sort((a, b) => a.key - b.key || a.index - b.index)
    .map((x) => x.item);
}
