import type { ErrorObject } from 'ajv';
import type { FieldError } from './errors.ts';

// Ajv's errors as the service's field errors: each keyword maps to a stable code of Django REST
// framework's vocabulary (D4), with an `attr` dot path, deduplicated, in the order of the input.
// - `format` values map to domain codes through FORMAT_CODES.
// - `maxItems: 0` marks an array whose item shape is undocumented: a non-empty one is `not_supported`.
// - Unions are `oneOf` with a `discriminator` (errors come from the chosen branch only); nullable
//   fields use `type: [T, 'null']`, never anyOf.

const FORMAT_CODES: Record<string, { code: string; detail: string }> = {
  date: { code: 'invalid', detail: 'Date has wrong format or is not a real date. Use YYYY-MM-DD.' },
  'utc-date-time': { code: 'invalid', detail: 'Datetime has wrong format. Use YYYY-MM-DDTHH:MM:SSZ (UTC).' },
  email: { code: 'invalid_email', detail: 'Enter a valid email address.' },
};

export function pathOf(instancePath: string): string[] {
  if (instancePath === '') return [];
  return instancePath.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** A field the operation does not take (JSON Schema's additionalProperties). */
export const UNKNOWN_FIELD_DETAIL = 'This field is not part of the documented payload and must not be sent.';

export function attrOf(parts: string[]): string {
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
        detail: UNKNOWN_FIELD_DETAIL,
        attr: attrOf([...path, String(params.additionalProperty)]),
      };
    case 'type':
      return e.data === null
        ? { code: 'null', detail: 'This field may not be null.', attr: attrOf(path) }
        : { code: 'invalid', detail: `Expected ${describeType(params.type)}.`, attr: attrOf(path) };
    case 'enum':
    case 'const': {
      const allowed = (e.keyword === 'enum' ? (schema as unknown[]) : [schema]).map(String).join(', ');
      return { code: 'invalid_choice', detail: `"${textOf(e.data)}" is not a valid choice. Allowed: ${allowed}.`, attr: attrOf(path) };
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
        ? { code: 'invalid_choice', detail: `"${textOf((e.data as Record<string, unknown>)?.[tag])}" is not a valid choice.`, attr: attrOf([...path, tag]) }
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

/**
 * A value as String() writes it. String() throws on an object without a prototype (built in code,
 * never by a JSON parse) or an array holding one; such a value reads as its kind ([object Object]).
 */
function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
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
  // A value of the wrong type is not a choice either: its `invalid` says it all (`null`, or a query
  // parameter sent twice, which arrives as a list), without a second `invalid_choice` at the same place.
  const mistyped = new Set(errors.filter((e) => e.keyword === 'type').map((e) => e.instancePath));
  for (const e of errors) {
    if (e.keyword === 'enum' && mistyped.has(e.instancePath)) continue;
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
