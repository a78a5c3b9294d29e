// Small formatting helpers the dashboard's pages share.
export const nf = new Intl.NumberFormat('en-GB');

/** A UTC time from the API ("2025-03-04T10:21:00Z") as "2025-03-04 10:21:00 UTC"; a dash when absent. */
export const utc = (time) => (time ? `${time.replace('T', ' ').replace('Z', '')} UTC` : '—');

/** A figure of a measure: counts grouped by thousands, money (decimal strings) as sent. */
export const figure = (value) => (value === null || value === undefined ? '—' : typeof value === 'number' ? nf.format(value) : value);

export const MEASURE_NAMES = {
  accounts: 'Accounts', customers: 'Customers', supply_points: 'Supply points', meters: 'Meters', statements: 'Statements',
  transactions: 'Transactions', notes: 'Notes', payment_instructions: 'Payment instructions', balance_total: 'Balance total',
  statements_gross_total: 'Statements gross total', not_migrated: 'Not migrated',
  skipped: 'Skipped (marked to skip)', failed: 'Failed (see the job\'s results)', account_differs: 'Account differs (kept as imported before)',
};

export const VERDICT_TEXT = {
  balanced: 'Every legacy control total given, the file and what the store holds agree.',
  differs: 'At least one measure does not agree: see the measures and the exceptions below.',
  incomplete: 'The job has not finished: the figures can still move.',
};
