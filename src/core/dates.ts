// The one date rule of the service (issue #14): every date and datetime a client sends lies within
// DATE_MIN..DATE_MAX, so nothing that passes validation can fail in PostgreSQL (whose `date` ends at
// 5874897 AD and starts at 4713 BC, while a year 0000 or 10000 breaks the arithmetic and the text
// form) and the business never sees a date no supply contract can have. Dates are compared and
// shifted as day numbers, never as strings.

export const DATE_MIN = '1900-01-01';
export const DATE_MAX = '2100-12-31';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const MS_PER_DAY = 86_400_000;

/** A real calendar date in YYYY-MM-DD form (UTC, no time zone involved). */
export function isRealDate(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = DATE.exec(value);
  if (!m) return false;
  const d = utcDate(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** Days since 1970-01-01 of a real YYYY-MM-DD date: the value dates are compared by. */
export function dayNumber(date: string): number {
  const m = DATE.exec(date);
  if (!m) throw new Error(`not a YYYY-MM-DD date: ${date}`);
  return utcDate(Number(m[1]), Number(m[2]) - 1, Number(m[3])).getTime() / MS_PER_DAY;
}

// Date.UTC reads years 0-99 as 1900-1999; setUTCFullYear takes them as written.
function utcDate(year: number, monthIndex: number, day: number): Date {
  const d = new Date(0);
  d.setUTCFullYear(year, monthIndex, day);
  return d;
}

/** Today in UTC, YYYY-MM-DD. */
export function todayUtc(now = new Date()): string {
  return now.toISOString().slice(0, 10);
}

export interface DateProblem { code: 'min_value' | 'max_value'; detail: string }

/** Why a real date breaks the rule (out of range, or in the future when `notFuture`), or null. */
export function dateProblem(date: string, options: { notFuture?: boolean } = {}): DateProblem | null {
  const day = dayNumber(date);
  if (day < dayNumber(DATE_MIN)) return { code: 'min_value', detail: `Ensure this date is on or after ${DATE_MIN}.` };
  if (day > dayNumber(DATE_MAX)) return { code: 'max_value', detail: `Ensure this date is on or before ${DATE_MAX}.` };
  if (options.notFuture && day > dayNumber(todayUtc())) return { code: 'max_value', detail: 'Ensure this date is not in the future.' };
  return null;
}
