import { dayNumber, isRealDate } from './dates.ts';

// Cross-field rules: checks JSON Schema cannot express, written as typed maps from name to check.
// A schema is marked with one rule of a map (`ruleOf(MAP, 'name')`): the name is checked against the
// map's keys when it compiles, and the map travels with the schema to the validator (under a symbol,
// so it is in neither the JSON the validator compiles nor the OpenAPI document), which resolves every
// name while it compiles. Nothing is registered by import side effects.
// A rule receives the value even when other parts failed, so it must be defensive.
// Rules run on every value they mark, on every body: a rule that finds nothing answers NO_FINDINGS
// rather than a new empty array.

/** One problem a rule found; `path` is relative to the marked value, dot form, '' for the value itself. */
export interface RuleFinding { path: string; code: string; detail: string }
export type RuleCheck = (value: unknown) => readonly RuleFinding[];

/** What a rule answers when it finds nothing (shared, frozen). */
export const NO_FINDINGS: readonly RuleFinding[] = Object.freeze([]);
export type RuleMap = Readonly<Record<string, RuleCheck>>;

const RULES: unique symbol = Symbol('cross-field rules');

/** Schema options that run rule `name` of `rules` on the value the schema describes. */
export function ruleOf<R extends RuleMap>(rules: R, name: keyof R & string): { 'x-rules': string; [RULES]: RuleMap } {
  return { 'x-rules': name, [RULES]: rules };
}

/** Every rule the marked schemas inside `schema` carry, by name; one name for two checks is a mistake. */
export function rulesOf(schema: object): Map<string, RuleCheck> {
  const found = new Map<string, RuleCheck>();
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!node || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    const carried = (node as { [RULES]?: RuleMap })[RULES];
    for (const [name, check] of Object.entries(carried ?? {})) {
      if (found.has(name) && found.get(name) !== check) throw new Error(`two cross-field rules are named ${name}`);
      found.set(name, check);
    }
    stack.push(...Object.values(node));
  }
  return found;
}

/** `to` must not be before `from` (both YYYY-MM-DD strings): `invalid_date_range` at `to`. */
export function dateRangeRule(from: string, to: string): RuleCheck {
  return (value) => {
    const item = value as Record<string, unknown> | null;
    const start = item?.[from];
    const end = item?.[to];
    return isRealDate(start) && isRealDate(end) && dayNumber(end) < dayNumber(start)
      ? [{ path: to, code: 'invalid_date_range', detail: `${to} must not be before ${from}.` }]
      : NO_FINDINGS;
  };
}

/** A key may appear once among the items of `arrayField`: `duplicate` at each repeat. */
export function uniqueItemsRule(arrayField: string, keyField: string): RuleCheck {
  return (value) => {
    const items = (value as Record<string, unknown> | null)?.[arrayField];
    if (!Array.isArray(items)) return NO_FINDINGS;
    const seen = new Set<string>();
    const found: RuleFinding[] = [];
    for (let index = 0; index < items.length; index += 1) {
      const key = (items[index] as Record<string, unknown> | null)?.[keyField];
      if (typeof key !== 'string') continue;
      if (seen.has(key)) found.push({ path: `${arrayField}.${index}.${keyField}`, code: 'duplicate', detail: `This ${keyField} appears earlier in the request.` });
      seen.add(key);
    }
    return found.length > 0 ? found : NO_FINDINGS;
  };
}
