// Driver errors are recognised by SQLSTATE and constraint name, never by message text. Both pg and
// PGlite expose `code` and `constraint` on their errors.
export interface DriverError { code?: string; constraint?: string }

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as DriverError;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
