// A multi-row INSERT binds one parameter per row and column, and PostgreSQL (PGlite too) takes at
// most 65535 in one statement. Kysely's column list is the union of the keys the rows set (a key
// left undefined is DEFAULT, with no parameter), so that union bounds the parameters a row needs.
export const MAX_BIND_PARAMETERS = 65_535;

/** The rows in batches that each fit one INSERT; sized from the rows' own columns, never typed in. */
export function rowBatches<T extends object>(rows: readonly T[]): T[][] {
  const columns = new Set(rows.flatMap((row) => Object.keys(row))).size;
  const size = Math.max(1, Math.floor(MAX_BIND_PARAMETERS / Math.max(1, columns)));
  const batches: T[][] = [];
  for (let i = 0; i < rows.length; i += size) batches.push(rows.slice(i, i + size));
  return batches;
}
