import { childInput } from '../lib/proc.ts';
import { jobRecordLine } from '../lib/job-records.ts';
import { createAccount, insertMany } from './raw-account.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// Migration-job baseline: the same records the service's job is given, each parsed and written with
// raw SQL at the service's worker concurrency: the account staged (INSERT … ON CONFLICT, as
// raw-stage.ts), created (one transaction, raw-account.ts, as raw-create.ts), then its history in
// one more transaction: the statement, the 20 transactions in one multi-row INSERT, the 2 notes. No
// validation, no queue, no record bookkeeping, no events: the floor the job is measured against.
interface Input { target: RawTarget; supplierId: number; teamId: number; templates: string[][]; records: number; connections: number }

type Obj = Record<string, any>;

const UPSERT = `INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES ($1, $2, $3::jsonb)
  ON CONFLICT (supplier_id, external_account_number) DO UPDATE SET data = EXCLUDED.data, updated_at = now()`;
const TX_COLUMNS = ['account_id', 'transaction_id', 'transaction_date', 'amount', 'type', 'reason', 'display_note', 'note', 'reference',
  'payment_type', 'product_code', 'line_items', 'tax_items'];

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
const result = await runLoops(input.connections, 0, 24 * 3600, async (n) => {
  if (n >= input.records) return false;
  const record = JSON.parse(jobRecordLine(input.templates, n)) as { account: Obj; statements: Obj[]; transactions: Obj[]; notes: Obj[] };
  const external = record.account.external_account_number as string;
  await db.query(UPSERT, [input.supplierId, external, JSON.stringify(record.account)]);
  const accountId = await db.tx((q) => createAccount(q, input, external));
  await db.tx(async (q) => {
    await insertMany(q, 'statements', ['account_id', 'statement_id', 'bill_period_from_date', 'bill_period_to_date', 'issued_date', 'number', 'gross_amount'],
      record.statements.map((s) => [accountId, s.statement_id, s.bill_period_from_date, s.bill_period_to_date, s.issued_date, s.number, Number(s.gross_amount).toFixed(2)]));
    await insertMany(q, 'transactions', TX_COLUMNS, record.transactions.map((t) => [accountId, t.transaction_id, t.transaction_date,
      Number(t.amount).toFixed(2), t.type, t.reason ?? null, t.display_note ?? null, t.note ?? null, t.reference ?? null, t.payment_type ?? null,
      t.product_code ?? null, t.line_items ? JSON.stringify(t.line_items) : null, t.tax_items ? JSON.stringify(t.tax_items) : null]));
    await insertMany(q, 'notes', ['account_id', 'body', 'document_paths', 'created_at', 'is_pinned', 'unpin_at'],
      record.notes.map((note) => [accountId, note.body ?? null, JSON.stringify(note.document_paths ?? []), note.created_at, note.is_pinned ?? false, note.unpin_at ?? null]));
  });
  return true;
});
await db.close();
const cpu = process.cpuUsage();
// The client's own CPU (parsing, building the statements), to set beside the service's per record.
process.stdout.write(`${JSON.stringify({ ...result, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
