import { randomInt } from 'node:crypto';
import type { Query } from './raw-db.ts';

// What the service writes when it creates an account, as raw SQL (shared by raw-create.ts and
// raw-job.ts): one transaction that reads the staged data and inserts the same rows (migrations/002:
// account, customers, supply addresses, supply points, agreements, meters, registers, transfer
// readings, notes, the attempt record), level by level with multi-row INSERTs.
export interface AccountIds { supplierId: number; teamId: number }

type Obj = Record<string, any>;

export async function insertMany(q: Query, table: string, columns: string[], rows: unknown[][]): Promise<number[]> {
  if (rows.length === 0) return [];
  const params: unknown[] = [];
  const values = rows.map((row) => `(${row.map((v) => { params.push(v); return `$${params.length}`; }).join(', ')})`);
  const out = await q<{ id: number }>(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values.join(', ')} RETURNING id`, params);
  return out.map((r) => Number(r.id));
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const accountNumber = () => `A-${Array.from({ length: 8 }, () => ALPHABET[randomInt(36)]).join('')}`;
const json = (v: unknown) => JSON.stringify(v);
const KIND_FIELDS = new Set(['supply_type', 'supply_start_date', 'last_billed_to_date', 'identifier', 'agreements', 'meters', 'transfer_readings']);

export async function createAccount(q: Query, input: AccountIds, external: string): Promise<number> {
  const startedAt = new Date();
  const [staged] = await q<{ id: number; data: Obj }>(
    'SELECT id, data FROM account_imports WHERE supplier_id = $1 AND external_account_number = $2 AND account_id IS NULL FOR UPDATE',
    [input.supplierId, external]);
  if (!staged) throw new Error(`not staged: ${external}`);
  const d = staged.data;
  const b = d.billing_address ?? {};
  const [accountId] = await insertMany(q, 'accounts',
    ['number', 'account_import_id', 'supplier_id', 'external_account_number', 'operations_team_id', 'billing_street_address',
      'billing_locality', 'billing_administrative_area', 'billing_country', 'billing_postal_code', 'unknown_occupier', 'metadata'],
    [[accountNumber(), staged.id, input.supplierId, external, input.teamId, b.street_address, b.locality ?? null,
      b.administrative_area ?? null, b.country, b.postal_code, d.unknown_occupier ?? null, json(d.metadata ?? [])]]);
  await insertMany(q, 'customers',
    ['account_id', 'position', 'given_name', 'family_name', 'email', 'mobile', 'landline', 'alternative_phone_numbers',
      'date_of_birth', 'opted_into_updates', 'opted_into_offers', 'opted_into_sms'],
    (d.customers as Obj[]).map((c, i) => [accountId, i, c.given_name, c.family_name, c.email ?? null, c.mobile ?? null,
      c.landline ?? null, json(c.alternative_phone_numbers ?? []), c.date_of_birth ?? null, c.customer_preferences?.opted_into_updates ?? null,
      c.customer_preferences?.opted_into_offers ?? null, c.customer_preferences?.opted_into_sms ?? null]));
  const addresses = d.supply_addresses as Obj[];
  const addressIds = await insertMany(q, 'supply_addresses',
    ['account_id', 'position', 'supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_postcode',
      'customer_at_supply_address_from_date'],
    addresses.map((a, i) => [accountId, i, a.supply_address1, a.supply_address2 ?? null, a.supply_address3 ?? null,
      a.supply_address4 ?? null, a.supply_postcode, a.customer_at_supply_address_from_date ?? null]));
  const points = addresses.flatMap((a, ai) => (a.supply_points as Obj[]).map((p, i) => ({ p, i, addressId: addressIds[ai] })));
  const pointIds = await insertMany(q, 'supply_points',
    ['account_id', 'supply_address_id', 'position', 'supply_type', 'supply_start_date', 'last_billed_to_date', 'identifier', 'details'],
    points.map(({ p, i, addressId }) => [accountId, addressId, i, p.supply_type, p.supply_start_date, p.last_billed_to_date ?? null,
      p.identifier ?? null, json(Object.fromEntries(Object.entries(p).filter(([k]) => !KIND_FIELDS.has(k))))]));
  const meters = points.flatMap(({ p }, pi) => ((p.meters ?? []) as Obj[]).map((m, i) => ({ m, i, pointId: pointIds[pi] })));
  await insertMany(q, 'agreements', ['supply_point_id', 'position', 'tariff_code', 'effective_from'],
    points.flatMap(({ p }, pi) => ((p.agreements ?? []) as Obj[]).map((a, i) => [pointIds[pi], i, a.tariff_code, a.effective_from])));
  await insertMany(q, 'transfer_readings', ['supply_point_id', 'position', 'register_type', 'read_date', 'value'],
    points.flatMap(({ p }, pi) => ((p.transfer_readings ?? []) as Obj[]).map((r, i) => [pointIds[pi], i, r.register_type, r.read_date, r.value])));
  const meterIds = await insertMany(q, 'meters',
    ['supply_point_id', 'position', 'serial_number', 'subgroup', 'seal_date', 'meter_number', 'status', 'active_from', 'meter_type'],
    meters.map(({ m, i, pointId }) => [pointId, i, m.serial_number, m.subgroup ?? null, m.seal_date ?? null, m.meter_number ?? null,
      m.status ?? null, m.active_from ?? null, m.meter_type ? json(m.meter_type) : null]));
  await insertMany(q, 'registers', ['meter_id', 'position', 'register_type', 'whole_digits', 'decimal_digits', 'active_from', 'multiplier'],
    meters.flatMap(({ m }, mi) => ((m.registers ?? []) as Obj[]).map((r, i) => [meterIds[mi], i, r.register_type, r.whole_digits ?? null,
      r.decimal_digits ?? null, r.active_from ?? null, r.multiplier ?? null])));
  await insertMany(q, 'notes', ['account_id', 'body', 'document_paths', 'created_at', 'is_pinned', 'unpin_at'],
    ((d.notes ?? []) as Obj[]).map((n) => [accountId, n.body ?? null, json(n.document_paths ?? []), n.created_at ?? startedAt,
      n.is_pinned ?? false, n.unpin_at ?? null]));
  await q('UPDATE account_imports SET account_id = $1 WHERE id = $2', [accountId, staged.id]);
  await q(`INSERT INTO create_attempts (supplier_id, external_account_number, dry_run, outcome, started_at) VALUES ($1, $2, false, 'created', $3)`,
    [input.supplierId, external, startedAt]);
  return accountId!;
}
