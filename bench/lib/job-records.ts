import { transactionItem } from './transactions-payload.ts';

// The lines of a migration-job upload (D11 records), built the same way by the bench (the service's
// upload) and by the raw baseline (bench/baselines/raw-job.ts), so both write the same rows.
//
// A full record: an account (the payload templates of account-payload.ts, each line a new account),
// one statement, 20 transactions of every type and 2 notes. Statement and transaction ids need only
// be unique per account, so the history part is one constant string. The statement closes December
// 2023 and the transactions are dated in 2024, so none is moved into the open period.
export const JOB_TRANSACTIONS = 20;
export const JOB_NOTES = 2;

const history = {
  statements: [{ bill_period_from_date: '2023-12-01', bill_period_to_date: '2023-12-31', statement_id: 'ST-2023-12', issued_date: '2024-01-03', number: 'No-2023-12', gross_amount: 120.5 }],
  transactions: Array.from({ length: JOB_TRANSACTIONS }, (_, i) => transactionItem(i, 'JOB')),
  notes: [
    { body: 'Migrated from OldCo CIS in the bench job.', created_at: '2024-03-01T09:00:00Z' },
    { body: 'Direct debit moved over with the account.', created_at: '2024-03-02T09:00:00Z', is_pinned: true, unpin_at: '2024-09-01T00:00:00Z' },
  ],
};
const HISTORY_JSON = JSON.stringify(history).slice(1, -1);

/** Line n (0-based) of the job: account template n % k with number n, then the history. */
export function jobRecordLine(templates: string[][], n: number): string {
  return `{"account":${templates[n % templates.length]!.join(String(n))},${HISTORY_JSON}}`;
}

/** A minimal record (account only) for the upload-memory row; about 80 bytes. */
export function minimalRecordLine(supplier: string, prefix: string, n: number): string {
  return `{"account":{"external_account_number":"${prefix}-${n}","import_supplier":"${supplier}"}}`;
}
