import { childInput } from '../lib/proc.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// Transactions baseline: the same batches the service is sent (template k belongs to account k),
// each parsed and written as one multi-row INSERT, at the same concurrency.
interface Input { target: RawTarget; supplierId: number; templates: string[][]; start: number; connections: number; seconds: number; warmupSeconds: number }

const COLUMNS = ['account_id', 'transaction_id', 'transaction_date', 'amount', 'type', 'reason', 'display_note', 'note', 'reference',
  'payment_type', 'product_code', 'line_items', 'tax_items'];

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
// The baseline's own created accounts (raw-create ran before), one per template.
const accountIds = (await db.query<{ id: number }>('SELECT id FROM accounts WHERE supplier_id = $1 ORDER BY id LIMIT $2',
  [input.supplierId, input.templates.length])).map((r) => Number(r.id));
if (accountIds.length < input.templates.length) throw new Error(`raw-transactions: only ${accountIds.length} accounts in the baseline store`);
const result = await runLoops(input.connections, input.warmupSeconds, input.seconds, async (n) => {
  const k = n % input.templates.length;
  const { transactions } = JSON.parse(input.templates[k]!.join(String(n))) as { transactions: Record<string, any>[] };
  const accountId = accountIds[k];
  const params: unknown[] = [];
  const rows = transactions.map((t) => {
    const values = [accountId, t.transaction_id, t.transaction_date, Number(t.amount).toFixed(2), t.type, t.reason ?? null,
      t.display_note ?? null, t.note ?? null, t.reference ?? null, t.payment_type ?? null, t.product_code ?? null,
      t.line_items ? JSON.stringify(t.line_items) : null, t.tax_items ? JSON.stringify(t.tax_items) : null];
    return `(${values.map((v) => { params.push(v); return `$${params.length}`; }).join(', ')})`;
  });
  await db.query(`INSERT INTO transactions (${COLUMNS.join(', ')}) VALUES ${rows.join(', ')}`, params);
  return true;
}, input.start);
await db.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
