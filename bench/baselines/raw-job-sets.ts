import { randomInt } from 'node:crypto';
import { childInput } from '../lib/proc.ts';
import { jobRecordLine } from '../lib/job-records.ts';
import { insertMany } from './raw-account.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// The set-based floor of a migration job: the same records as the service's job, written with raw SQL
// in chunks (`chunk` records a transaction, as the service's chunks), each table's rows for the whole
// chunk in ONE multi-row INSERT: the stages, the accounts, every level of their trees, the attempts,
// the statements, the transactions and the notes. No validation, no queue, no record bookkeeping, no
// events: what PostgreSQL on this machine takes to store these rows when nothing else is done.
interface Input { target: RawTarget; supplierId: number; teamId: number; templates: string[][]; records: number; connections: number; chunk: number }

type Obj = Record<string, any>;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const accountNumber = () => `A-${Array.from({ length: 8 }, () => ALPHABET[randomInt(36)]).join('')}`;
const json = (v: unknown) => JSON.stringify(v);
const KIND_FIELDS = new Set(['supply_type', 'supply_start_date', 'last_billed_to_date', 'identifier', 'agreements', 'meters', 'transfer_readings']);
const TX_COLUMNS = ['account_id', 'transaction_id', 'transaction_date', 'amount', 'type', 'reason', 'display_note', 'note', 'reference',
  'payment_type', 'product_code', 'line_items', 'tax_items'];

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
const chunks = Math.ceil(input.records / input.chunk);
let written = 0;
const result = await runLoops(input.connections, 0, 24 * 3600, async (c) => {
  if (c >= chunks) return false;
  const first = c * input.chunk;
  const records = Array.from({ length: Math.min(input.chunk, input.records - first) }, (_, i) =>
    JSON.parse(jobRecordLine(input.templates, first + i)) as { account: Obj; statements: Obj[]; transactions: Obj[]; notes: Obj[] });
  await db.tx(async (q) => {
    const startedAt = new Date();
    const importIds = await insertMany(q, 'account_imports', ['supplier_id', 'external_account_number', 'data'],
      records.map((r) => [input.supplierId, r.account.external_account_number, json(r.account)]));
    const accountIds = await insertMany(q, 'accounts',
      ['number', 'account_import_id', 'supplier_id', 'external_account_number', 'operations_team_id', 'billing_street_address',
        'billing_locality', 'billing_administrative_area', 'billing_country', 'billing_postal_code', 'unknown_occupier', 'metadata'],
      records.map(({ account: d }, k) => {
        const b = d.billing_address ?? {};
        return [accountNumber(), importIds[k], input.supplierId, d.external_account_number, input.teamId, b.street_address, b.locality ?? null,
          b.administrative_area ?? null, b.country, b.postal_code, d.unknown_occupier ?? null, json(d.metadata ?? [])];
      }));
    await insertMany(q, 'customers',
      ['account_id', 'position', 'given_name', 'family_name', 'email', 'mobile', 'landline', 'alternative_phone_numbers',
        'date_of_birth', 'opted_into_updates', 'opted_into_offers', 'opted_into_sms'],
      records.flatMap(({ account: d }, k) => (d.customers as Obj[]).map((c, i) => [accountIds[k], i, c.given_name, c.family_name, c.email ?? null,
        c.mobile ?? null, c.landline ?? null, json(c.alternative_phone_numbers ?? []), c.date_of_birth ?? null,
        c.customer_preferences?.opted_into_updates ?? null, c.customer_preferences?.opted_into_offers ?? null, c.customer_preferences?.opted_into_sms ?? null])));
    const addresses = records.flatMap(({ account: d }, k) => (d.supply_addresses as Obj[]).map((a, i) => ({ a, i, accountId: accountIds[k] })));
    const addressIds = await insertMany(q, 'supply_addresses',
      ['account_id', 'position', 'supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_postcode',
        'customer_at_supply_address_from_date'],
      addresses.map(({ a, i, accountId }) => [accountId, i, a.supply_address1, a.supply_address2 ?? null, a.supply_address3 ?? null,
        a.supply_address4 ?? null, a.supply_postcode, a.customer_at_supply_address_from_date ?? null]));
    const points = addresses.flatMap(({ a, accountId }, ai) => (a.supply_points as Obj[]).map((p, i) => ({ p, i, accountId, addressId: addressIds[ai] })));
    const pointIds = await insertMany(q, 'supply_points',
      ['account_id', 'supply_address_id', 'position', 'supply_type', 'supply_start_date', 'last_billed_to_date', 'identifier', 'details'],
      points.map(({ p, i, accountId, addressId }) => [accountId, addressId, i, p.supply_type, p.supply_start_date, p.last_billed_to_date ?? null,
        p.identifier ?? null, json(Object.fromEntries(Object.entries(p).filter(([key]) => !KIND_FIELDS.has(key))))]));
    await insertMany(q, 'agreements', ['supply_point_id', 'position', 'tariff_code', 'effective_from'],
      points.flatMap(({ p }, pi) => ((p.agreements ?? []) as Obj[]).map((a, i) => [pointIds[pi], i, a.tariff_code, a.effective_from])));
    await insertMany(q, 'transfer_readings', ['supply_point_id', 'position', 'register_type', 'read_date', 'value'],
      points.flatMap(({ p }, pi) => ((p.transfer_readings ?? []) as Obj[]).map((r, i) => [pointIds[pi], i, r.register_type, r.read_date, r.value])));
    const meters = points.flatMap(({ p }, pi) => ((p.meters ?? []) as Obj[]).map((m, i) => ({ m, i, pointId: pointIds[pi] })));
    const meterIds = await insertMany(q, 'meters',
      ['supply_point_id', 'position', 'serial_number', 'subgroup', 'seal_date', 'meter_number', 'status', 'active_from', 'meter_type'],
      meters.map(({ m, i, pointId }) => [pointId, i, m.serial_number, m.subgroup ?? null, m.seal_date ?? null, m.meter_number ?? null,
        m.status ?? null, m.active_from ?? null, m.meter_type ? json(m.meter_type) : null]));
    await insertMany(q, 'registers', ['meter_id', 'position', 'register_type', 'whole_digits', 'decimal_digits', 'active_from', 'multiplier'],
      meters.flatMap(({ m }, mi) => ((m.registers ?? []) as Obj[]).map((r, i) => [meterIds[mi], i, r.register_type, r.whole_digits ?? null,
        r.decimal_digits ?? null, r.active_from ?? null, r.multiplier ?? null])));
    await q(`UPDATE account_imports ai SET account_id = x.a FROM unnest($1::int8[], $2::int8[]) AS x(i, a) WHERE ai.id = x.i`, [importIds, accountIds]);
    await insertMany(q, 'create_attempts', ['supplier_id', 'external_account_number', 'dry_run', 'outcome', 'started_at'],
      records.map((r) => [input.supplierId, r.account.external_account_number, false, 'created', startedAt]));
    await insertMany(q, 'statements', ['account_id', 'statement_id', 'bill_period_from_date', 'bill_period_to_date', 'issued_date', 'number', 'gross_amount'],
      records.flatMap((r, k) => r.statements.map((s) => [accountIds[k], s.statement_id, s.bill_period_from_date, s.bill_period_to_date, s.issued_date,
        s.number, Number(s.gross_amount).toFixed(2)])));
    await insertMany(q, 'transactions', TX_COLUMNS, records.flatMap((r, k) => r.transactions.map((t) => [accountIds[k], t.transaction_id, t.transaction_date,
      Number(t.amount).toFixed(2), t.type, t.reason ?? null, t.display_note ?? null, t.note ?? null, t.reference ?? null, t.payment_type ?? null,
      t.product_code ?? null, t.line_items ? json(t.line_items) : null, t.tax_items ? json(t.tax_items) : null])));
    await insertMany(q, 'notes', ['account_id', 'body', 'document_paths', 'created_at', 'is_pinned', 'unpin_at'],
      records.flatMap((r, k) => [...((r.account.notes ?? []) as Obj[]), ...r.notes].map((n) => [accountIds[k], n.body ?? null,
        json(n.document_paths ?? []), n.created_at ?? startedAt, n.is_pinned ?? false, n.unpin_at ?? null])));
  });
  written += records.length;
  return true;
});
await db.close();
const cpu = process.cpuUsage();
// Records a second (not chunks), and the client's own CPU, to set beside the service's per record.
process.stdout.write(`${JSON.stringify({ ...result, ok: written, rps: written / Math.max(1e-9, result.seconds), cpuMs: (cpu.user + cpu.system) / 1000 })}\n`);
