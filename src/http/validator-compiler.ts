import type { FastifySchemaCompiler } from 'fastify';
import { bodyAjv, compileValidator, errorCodeOf, queryAjv, validationError } from '../core/validation.ts';
import { queryValueReader } from './query-values.ts';

/**
 * The one validator for the whole app (core/validation.ts): bodies strictly, path parameters and
 * query strings with coercion, every failure in the one error body. A route that reads its body
 * itself (a streamed upload) still judges its path with this.
 */
export const compileRequestValidator: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const validate = compileValidator(schema, httpPart === 'body' ? bodyAjv : queryAjv);
  const code = httpPart === 'body' ? errorCodeOf(schema) : 'invalid';
  const readValues = httpPart === 'querystring' || httpPart === 'params' ? queryValueReader(schema) : () => {};
  return (data: unknown) => {
    readValues(data);
    const errors = validate(data);
    return errors ? { error: validationError(code, errors) } : { value: data };
  };
};
