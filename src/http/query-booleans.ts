// Query strings carry booleans as text, and clients spell them differently: Python's requests
// sends `True`/`False`, others `1`/`0` or `TRUE`. Every spelling below is read as the boolean it
// names before validation; anything else is left as it is and fails validation as `invalid`.
const SPELLINGS = new Map<string, boolean>([['true', true], ['1', true], ['false', false], ['0', false]]);

/** A function that rewrites, in place, the boolean parameters of a query string schema. */
export function queryBooleanReader(schema: unknown): (query: unknown) => void {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | null)?.properties ?? {};
  const names = Object.entries(properties).filter(([, property]) => property.type === 'boolean').map(([name]) => name);
  if (names.length === 0) return () => {};
  return (query) => {
    if (typeof query !== 'object' || query === null) return;
    const values = query as Record<string, unknown>;
    for (const name of names) {
      const raw = values[name];
      if (typeof raw !== 'string') continue;
      const value = SPELLINGS.get(raw.toLowerCase());
      if (value !== undefined) values[name] = value;
    }
  };
}
