import type { ValidateFunction } from 'ajv';
import { compileWithRules, createAjv } from './ajv.ts';
import { AppError, type ErrorCode, type FieldError } from './errors.ts';
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
    validate = compileWithRules(ajv, withoutIds(schema), rulesOf(schema));
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
