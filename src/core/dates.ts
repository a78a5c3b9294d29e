// The one date rule of the service (issue #14): every date and datetime a client sends lies within
// DATE_MIN..DATE_MAX, so nothing that passes validation can fail in PostgreSQL (whose `date` ends at
// 5874897 AD and starts at 4713 BC, while a year 0000 or 10000 breaks the arithmetic and the text
// form) and the business never sees a date no supply contract can have. Dates are compared and
// shifted as day numbers, never as strings.
//
// Every date of every body passes through here several times, so the checks read the digits and do
// calendar arithmetic (proleptic Gregorian, as JavaScript's Date) instead of building Date objects.

export const DATE_MIN = '1900-01-01';
export const DATE_MAX = '2100-12-31';

const MS_PER_DAY = 86_400_000;
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `count` ASCII digits of `text` from `at` as a number, or -1 when any is not a digit 0-9. */
function digitsAt(text: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i += 1) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * Year, month and day of a `YYYY-MM-DD` string (the parts may be out of range) as one number,
 * YYYYMMDD, or -1: no array is made for the dates of every body, each read several times.
 */
function packedOf(value: string): number {
  if (value.length !== 10 || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45) return -1;
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 2);
  const day = digitsAt(value, 8, 2);
  return year < 0 || month < 0 || day < 0 ? -1 : year * 10_000 + month * 100 + day;
}

const yearOf = (packed: number): number => Math.floor(packed / 10_000);
const monthOf = (packed: number): number => Math.floor(packed / 100) % 100;
const dayOf = (packed: number): number => packed % 100;

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

function isRealDay(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= (month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month]!);
}

/** Days since 1970-01-01 of a real date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** A UTC datetime's shape: `Z`, whole seconds or up to 6 decimals (spec 2.1, D5). */
export const UTC_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

/**
 * A UTC datetime of that shape with a real date and a time of day 00:00:00 to 23:59:59 (Date would
 * read 24:00:00 as the next day and refuses a 60th second, so neither names what was sent).
 */
export function isUtcDateTime(value: string): boolean {
  return UTC_DATE_TIME.test(value) && isRealDate(value.slice(0, 10))
    && digitsAt(value, 11, 2) <= 23 && digitsAt(value, 14, 2) <= 59 && digitsAt(value, 17, 2) <= 59;
}

/** A real calendar date in YYYY-MM-DD form (UTC, no time zone involved). */
export function isRealDate(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const packed = packedOf(value);
  return packed >= 0 && isRealDay(yearOf(packed), monthOf(packed), dayOf(packed));
}

/** Days since 1970-01-01 of a real YYYY-MM-DD date: the value dates are compared by. */
export function dayNumber(date: string): number {
  const packed = packedOf(date);
  if (packed < 0) throw new Error(`not a YYYY-MM-DD date: ${date}`);
  const year = yearOf(packed);
  const month = monthOf(packed);
  const day = dayOf(packed);
  if (isRealDay(year, month, day)) return daysFromCivil(year, month, day);
  // Not a real date (callers check first): a month or day out of range rolls over, as Date does.
  const d = new Date(0);
  // Date.UTC reads years 0-99 as 1900-1999; setUTCFullYear takes them as written.
  d.setUTCFullYear(year, month - 1, day);
  return d.getTime() / MS_PER_DAY;
}

export interface DateProblem { code: 'min_value' | 'max_value'; detail: string }

const MIN_DAY = dayNumber(DATE_MIN);
const MAX_DAY = dayNumber(DATE_MAX);
const TOO_EARLY: DateProblem = Object.freeze({ code: 'min_value', detail: `Ensure this date is on or after ${DATE_MIN}.` });
const TOO_LATE: DateProblem = Object.freeze({ code: 'max_value', detail: `Ensure this date is on or before ${DATE_MAX}.` });
const IN_FUTURE: DateProblem = Object.freeze({ code: 'max_value', detail: 'Ensure this date is not in the future.' });

/** Why a real date breaks the rule (out of range, or in the future when `notFuture`), or null. */
export function dateProblem(date: string, options?: { notFuture?: boolean }): DateProblem | null {
  const day = dayNumber(date);
  if (day < MIN_DAY) return TOO_EARLY;
  if (day > MAX_DAY) return TOO_LATE;
  // Today's day number in UTC: whole days since 1970-01-01.
  if (options?.notFuture && day > Math.floor(Date.now() / MS_PER_DAY)) return IN_FUTURE;
  return null;
}
