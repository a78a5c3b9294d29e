// How every CSV the service writes encodes a cell. A spreadsheet opening the file runs a cell that
// begins with = + - @ (or a tab or carriage return, which some strip before looking) as a formula:
// a supplier's text in a results file could then call out or run commands on the reader's machine.
// As OWASP advises, such a text cell is prefixed with a single quote, then quoted as CSV needs.
// Numbers are written as they are: the numeric columns here (a line, an error count) are never
// negative, and a spreadsheet must keep reading them as numbers.

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV cell: empty for null/undefined, a number as is, text neutralised and quoted. */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
