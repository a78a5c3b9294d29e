import type { Ajv, ValidateFunction } from 'ajv';
import { compileWithRules, createAjv } from './ajv.ts';
import { AppError, messageFor, type ErrorCode, type FieldError } from './errors.ts';
import { sortByDocumentOrder, toFieldErrors } from './field-errors.ts';
import { INEXACT_NUMBER_DETAIL, inexactNumbersOf } from './json-numbers.ts';
import { rulesOf } from './rules.ts';
import { findUnstorableText } from './unstorable-text.ts';

// The one validator of the service, split by job: ajv.ts sets Ajv up (keywords, formats), rules.ts
// holds the cross-field rules' types and shared checks, field-errors.ts maps Ajv's errors to field
// errors in document order, unstorable-text.ts refuses text PostgreSQL cannot store. Here they are
// put together: a schema compiles once, and a validation answers null or every field error.

export const bodyAjv = createAjv({ coerce: false });
export const queryAjv = createAjv({ coerce: true });

const compiled = new WeakMap<object, ValidateFunction>();

export type Validator = (data: unknown) => FieldError[] | null;

/** Compiles a schema once; the result returns null when valid or the field errors in document order. */
export function compileValidator(schema: object, ajv = bodyAjv): Validator {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = compileWithRules(ajv, splitByName(ajv, schema), rulesOf(schema));
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

/** The key each named schema is registered under, per Ajv instance. */
const registeredNames = new WeakMap<Ajv, WeakMap<object, string>>();
let registrations = 0;

/**
 * The schema as Ajv gets it: a JSON copy in which every schema named by `$id` below the root is a
 * `$ref` to that schema, registered once per Ajv instance under a key of its own. `$id` names a
 * schema for the OpenAPI document (a component there); Ajv is never given one, or it would refuse
 * the same named schema in two bodies.
 * Why the references: Ajv writes one function per compiled schema, and inlined, the account data
 * is one function of about 300 KB of code, more than V8 optimises, so it would run in the
 * interpreter at half speed or less. With a function per named shape (customer, supply point,
 * meter, ...) each stays small. The checks, their order and the errors (paths included) are the same.
 */
function splitByName(ajv: Ajv, schema: object): object {
  let names = registeredNames.get(ajv);
  if (!names) registeredNames.set(ajv, names = new WeakMap());
  const known = names;
  const copy = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((item) => copy(item, false));
    if (node === null || typeof node !== 'object') return node;
    const id = (node as { $id?: unknown }).$id;
    if (!root && typeof id === 'string') {
      let key = known.get(node);
      if (key === undefined) {
        registrations += 1;
        key = `${id}.${registrations}`;
        known.set(node, key);
        ajv.addSchema(copy(node, true) as object, key);
      }
      return { $ref: key };
    }
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(node)) {
      if (name !== '$id' && value !== undefined && typeof value !== 'function') out[name] = copy(value, false);
    }
    return out;
  };
  return copy(schema, true) as object;
}

/** A number the parse changed, at a field nothing else already refused (one reason is enough). */
function inexactNumberErrors(inexact: ReadonlyMap<string, string> | undefined, errors: FieldError[]): FieldError[] {
  if (!inexact) return [];
  const refused = new Set(errors.map((e) => e.attr));
  return [...inexact.keys()].filter((attr) => !refused.has(attr)).map((attr) => ({
    code: 'invalid', attr, detail: INEXACT_NUMBER_DETAIL,
  }));
}

/** The top-level code a schema's failures carry (`x-error-code`, default `invalid`). */
export function errorCodeOf(schema: object): ErrorCode {
  return ((schema as Record<string, unknown>)['x-error-code'] as ErrorCode | undefined) ?? 'invalid';
}

export function validationError(code: ErrorCode, errors: FieldError[]): AppError {
  return new AppError(code, messageFor(code), { errors });
}
