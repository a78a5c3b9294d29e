import { Type } from '@sinclair/typebox';
import { DATE_MAX, DATE_MIN, dateProblem, isRealDate, UTC_DATE_TIME } from '../core/dates.ts';
import { NO_FINDINGS, ruleOf, type RuleFinding } from '../core/rules.ts';

// Dates and datetimes a client sends, carrying the one date rule of src/core/dates.ts. The rules look
// only at well-formed values: a malformed one already has its `invalid` from the format.

const asFindings = (problem: Omit<RuleFinding, 'path'> | null): readonly RuleFinding[] => (problem ? [{ path: '', ...problem }] : NO_FINDINGS);

const NOT_FUTURE = { notFuture: true };

const DATE_RULES = {
  date: (value) => (isRealDate(value) ? asFindings(dateProblem(value)) : NO_FINDINGS),
  'not-future': (value) => (isRealDate(value) ? asFindings(dateProblem(value, NOT_FUTURE)) : NO_FINDINGS),
  'utc-date-time': (value) => {
    const day = typeof value === 'string' && UTC_DATE_TIME.test(value) ? value.slice(0, 10) : null;
    const problem = day && isRealDate(day) ? dateProblem(day) : null;
    return asFindings(problem && { code: problem.code, detail: problem.detail.replace('this date', 'this datetime') });
  },
} satisfies Record<string, (value: unknown) => readonly RuleFinding[]>;

/** A real calendar date, YYYY-MM-DD (`2023-02-30` is `invalid`), from DATE_MIN to DATE_MAX (`min_value` / `max_value`). */
export const DateString = Type.String({
  format: 'date', maxLength: 10, ...ruleOf(DATE_RULES, 'date'), description: `Date, YYYY-MM-DD, from ${DATE_MIN} to ${DATE_MAX}.`,
});

/**
 * A date that has passed (a date of birth, the day a statement was issued): the date rule, and not
 * after today in UTC (`max_value`).
 */
export const PastDate = Type.String({
  format: 'date', maxLength: 10, ...ruleOf(DATE_RULES, 'not-future'), description: `Date, YYYY-MM-DD, from ${DATE_MIN}, not in the future (today in UTC at the latest).`,
});

/** A UTC datetime with `Z`, whole seconds or up to 6 decimals, its date within the date rule. */
export const UtcDateTime = Type.String({
  format: 'utc-date-time', maxLength: 32, ...ruleOf(DATE_RULES, 'utc-date-time'),
  description: `UTC datetime, YYYY-MM-DDTHH:MM:SSZ, from ${DATE_MIN} to ${DATE_MAX}.`,
});
