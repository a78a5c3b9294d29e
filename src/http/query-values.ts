// Query strings (and path parameters) carry every value as text; these are read here, in place,
// before validation coerces the rest:
// - Booleans: clients spell them differently (Python's requests sends `True`/`False`, others `1`/`0`
//   or `TRUE`). Every spelling below is read as the boolean it names; anything else is left as it is
//   and fails validation as `invalid`.
// - Integers: only plain decimal digits, with an optional minus, are numbers. Validation's own
//   coercion would also take `1e3`, `0x10`, ` 10` and `1e999` (as Infinity, which no bound stops and
//   the database then refuses); any other text is made NaN here, so it fails as "Expected an integer."
const SPELLINGS = new Map<string, boolean>([['true', true], ['1', true], ['false', false], ['0', false]]);
const INTEGER_TEXT = /^-?\d+$/;

type Properties = Record<string, { type?: unknown }>;

/** A function that rewrites, in place, the boolean and integer parameters of a query string or path schema. */
export function queryValueReader(schema: unknown): (query: unknown) => void {
  const properties = (schema as { properties?: Properties } | null)?.properties ?? {};
  const named = (type: string) => Object.entries(properties).filter(([, property]) => property.type === type).map(([name]) => name);
  const booleans = named('boolean');
  const integers = named('integer');
  if (booleans.length === 0 && integers.length === 0) return () => {};
  return (query) => {
    if (typeof query !== 'object' || query === null) return;
    const values = query as Record<string, unknown>;
    for (const name of booleans) {
      const raw = values[name];
      if (typeof raw !== 'string') continue;
      const value = SPELLINGS.get(raw.toLowerCase());
      if (value !== undefined) values[name] = value;
    }
    for (const name of integers) {
      const raw = values[name];
      if (typeof raw === 'string' && !INTEGER_TEXT.test(raw)) values[name] = Number.NaN;
    }
  };
}
