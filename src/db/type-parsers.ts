// One place decides how PostgreSQL values become JS values, for both drivers, so the same query
// returns the same shapes on PGlite and on a server:
// - int8 (ids, count(*)) → number: ids stay far below 2^53.
// - date → 'YYYY-MM-DD' string: a calendar date has no time zone; a JS Date would invent one.
// - numeric → decimal string (both drivers' default): money is never a float.
// - timestamptz → Date (both drivers' default).
const INT8_OID = 20;
const DATE_OID = 1082;

export const typeParsers: Record<number, (value: string) => unknown> = {
  [INT8_OID]: (value) => Number(value),
  [DATE_OID]: (value) => value,
};
