import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isRealDate, isUtcDateTime } from './dates.ts';
import { attrOf, pathOf } from './field-errors.ts';
import { decimalPlacesOf, inexactNumbersOf } from './json-numbers.ts';
import type { RuleCheck } from './rules.ts';

// The Ajv set-up of the one validator: strict (no coercion of bodies, no removal of undocumented
// fields, every error collected) and the service's own keywords and formats:
// - `x-error-code` on a root schema: the top-level code of a failure (read by validation.ts).
// - `x-rules: NAME` on any value: runs the cross-field rule NAME of the rule maps the schema carries
//   (rules.ts), resolved while the schema compiles.
// - `x-decimal-places: N` on a number: at most N decimals, counted on the text that was sent when
//   the parse changed the number (json-numbers.ts), else on the number's shortest text.
// - `utc-date-time`, and integer widths for the OpenAPI document.

const addFormats = addFormatsModule as unknown as (ajv: Ajv, formats: string[]) => Ajv;

/** The rules of the schema being compiled: Ajv compiles synchronously, so one slot is enough. */
type CompiledRule = ((value: unknown, ctx?: { instancePath: string }) => boolean) & { errors?: Partial<ErrorObject>[] };

let compilingRules: ReadonlyMap<string, RuleCheck> | undefined;

/** Compiles `schema` with the cross-field rules its `x-rules` names resolve to. */
export function compileWithRules(ajv: Ajv, schema: object, rules: ReadonlyMap<string, RuleCheck>): ValidateFunction {
  compilingRules = rules;
  try {
    return ajv.compile(schema);
  } finally {
    compilingRules = undefined;
  }
}

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
    // Each `$ref` stays a call to its own function (validation.ts splitByName says why).
    inlineRefs: false,
  });
  addFormats(ajv, ['email']);
  // A real calendar date: the same answer as ajv-formats' `date`, with the service's one date check.
  ajv.addFormat('date', { type: 'string', validate: isRealDate });
  // Integer widths, for the OpenAPI document: each such integer also has the minimum and maximum
  // that enforce the width, so the format itself checks nothing (one error per problem).
  for (const width of ['int32', 'int64']) ajv.addFormat(width, { type: 'number', validate: () => true });
  // UTC only, with Z, whole seconds or a fraction (spec 2.1, D5).
  ajv.addFormat('utc-date-time', { type: 'string', validate: isUtcDateTime });
  ajv.addVocabulary(['x-error-code', 'x-attr-name']);
  ajv.addKeyword({
    keyword: 'x-decimal-places',
    type: 'number',
    schemaType: 'number',
    errors: false,
    validate: (places: number, value: number, _schema: unknown, ctx?: { instancePath: string; rootData: unknown }) => {
      const sent = ctx ? inexactNumbersOf(ctx.rootData)?.get(attrOf(pathOf(ctx.instancePath))) : undefined;
      if (sent !== undefined) return decimalPlacesOf(sent) <= places;
      // An integer has no decimals, whatever its shortest text (1e+21) says.
      return Number.isInteger(value) || decimalPlaces(value) <= places;
    },
  });
  ajv.addKeyword({
    keyword: 'x-rules',
    schemaType: 'string',
    errors: true,
    compile: (name: string) => {
      const ruleCheck = compilingRules?.get(name);
      if (!ruleCheck) throw new Error(`no cross-field rule named ${name} travels with this schema`);
      // Ajv reads `errors` only after a false answer, so a passing value allocates nothing here.
      const check: CompiledRule = (value, ctx) => {
        const found = ruleCheck(value);
        if (found.length === 0) return true;
        check.errors = found.map((f): Partial<ErrorObject> => ({
          keyword: 'x-rules',
          instancePath: `${ctx?.instancePath ?? ''}${f.path ? `/${f.path.split('.').join('/')}` : ''}`,
          params: { code: f.code },
          message: f.detail,
        }));
        return false;
      };
      return check;
    },
  });
  return ajv;
}

function decimalPlaces(value: number): number {
  if (!Number.isFinite(value)) return Infinity;
  const text = String(value);
  // The usual case, a plain decimal (1.25): the digits after the point.
  const point = text.indexOf('.');
  if (point >= 0 && !text.includes('e')) return text.length - point - 1;
  const exp = text.match(/e([+-]\d+)$/);
  const mantissa = exp ? text.slice(0, exp.index) : text;
  const decimals = mantissa.includes('.') ? mantissa.split('.')[1]!.length : 0;
  return Math.max(0, decimals - (exp ? Number(exp[1]) : 0));
}
