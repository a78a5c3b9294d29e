import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
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
    compile: (name: string) => {
      const ruleCheck = compilingRules?.get(name);
      if (!ruleCheck) throw new Error(`no cross-field rule named ${name} travels with this schema`);
      const check: CompiledRule = (value, ctx) => {
        const found = ruleCheck(value);
        check.errors = found.map((f): Partial<ErrorObject> => ({
          keyword: 'x-rules',
          instancePath: `${ctx?.instancePath ?? ''}${f.path ? `/${f.path.split('.').join('/')}` : ''}`,
          params: { code: f.code },
          message: f.detail,
        }));
        return found.length === 0;
      };
      return check;
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
