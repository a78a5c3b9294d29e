import { randomInt } from 'node:crypto';
import { childInput } from '../lib/proc.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// The create row's floor: each staged account created by ONE statement sent on its own, so it
// commits by itself (no BEGIN, no COMMIT): one round trip and one commit per account, the least any
// client can spend. The statement locks the staged row and reads its data in the database (nothing
// travels to the client and back), writes the account and its whole tree (customers, supply
// addresses, points, agreements, meters, registers, transfer readings, notes) from that data, links
// the import row to the account, and writes the attempt record and the `import_process.completed`
// event: the rows the service writes for a create (create-account.service.ts), mapped as its
// account-tree.builder.ts maps them. It is prepared once per connection, so PostgreSQL plans it
// once. No validation, no HTTP, no lock but the row's: the service is measured against it.
// (raw-create.ts, BEGIN, 12 statements level by level and COMMIT, is kept for the transactions row's
// seeding and for comparison: BENCH_CREATE_BASELINE=levels.)
interface Input { target: RawTarget; supplierId: number; teamId: number; connections: number; seconds: number; warmupSeconds: number }

/** Fields of a supply point kept as columns or as rows of their own; the rest is its `details`. */
const POINT_COLUMNS = ['supply_type', 'supply_start_date', 'last_billed_to_date', 'agreements', 'identifier', 'meters', 'transfer_readings'];

// $1 supplier, $2 external account number, $3 the new account's number, $4 team, $5 when the attempt started.
const CREATE = `
WITH staged AS (
  SELECT id, data FROM account_imports
  WHERE supplier_id = $1 AND external_account_number = $2 AND account_id IS NULL AND NOT skipped
  FOR UPDATE
), account AS (
  INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number, operations_team_id, billing_street_address,
    billing_locality, billing_administrative_area, billing_country, billing_postal_code, unknown_occupier, metadata)
  SELECT $3, s.id, $1, $2, $4, s.data #>> '{billing_address,street_address}', s.data #>> '{billing_address,locality}',
    s.data #>> '{billing_address,administrative_area}', s.data #>> '{billing_address,country}', s.data #>> '{billing_address,postal_code}',
    (s.data ->> 'unknown_occupier')::boolean, coalesce(s.data -> 'metadata', '[]')
  FROM staged s
  RETURNING id, created_at
), customer_rows AS (
  INSERT INTO customers (account_id, position, given_name, family_name, email, mobile, landline, alternative_phone_numbers,
    date_of_birth, opted_into_updates, opted_into_offers, opted_into_sms)
  SELECT a.id, e.n - 1, e.j ->> 'given_name', e.j ->> 'family_name', e.j ->> 'email', e.j ->> 'mobile', e.j ->> 'landline',
    coalesce(e.j -> 'alternative_phone_numbers', '[]'), (e.j ->> 'date_of_birth')::date,
    (e.j #>> '{customer_preferences,opted_into_updates}')::boolean, (e.j #>> '{customer_preferences,opted_into_offers}')::boolean,
    (e.j #>> '{customer_preferences,opted_into_sms}')::boolean
  FROM account a, staged s, jsonb_array_elements(s.data -> 'customers') WITH ORDINALITY AS e(j, n)
), addresses AS (
  INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3, supply_address4,
    supply_postcode, customer_at_supply_address_from_date)
  SELECT a.id, e.n - 1, e.j ->> 'supply_address1', e.j ->> 'supply_address2', e.j ->> 'supply_address3', e.j ->> 'supply_address4',
    e.j ->> 'supply_postcode', (e.j ->> 'customer_at_supply_address_from_date')::date
  FROM account a, staged s, jsonb_array_elements(s.data -> 'supply_addresses') WITH ORDINALITY AS e(j, n)
  RETURNING id, account_id, position
), point_source AS (
  SELECT ad.id AS address_id, ad.account_id, (p.n - 1)::int AS position, p.j
  FROM staged s, jsonb_array_elements(s.data -> 'supply_addresses') WITH ORDINALITY AS e(j, n)
    JOIN addresses ad ON ad.position = e.n - 1
    CROSS JOIN LATERAL jsonb_array_elements(e.j -> 'supply_points') WITH ORDINALITY AS p(j, n)
), points AS (
  INSERT INTO supply_points (account_id, supply_address_id, position, supply_type, supply_start_date, last_billed_to_date, identifier, details)
  SELECT account_id, address_id, position, j ->> 'supply_type', (j ->> 'supply_start_date')::date, (j ->> 'last_billed_to_date')::date,
    CASE WHEN j ->> 'supply_type' = 'ELECTRICITY' THEN j ->> 'identifier' END, j - '{${POINT_COLUMNS.join(',')}}'::text[]
  FROM point_source
  RETURNING id, supply_address_id, position
), point_keys AS (
  SELECT p.id, ps.j FROM points p JOIN point_source ps ON ps.address_id = p.supply_address_id AND ps.position = p.position
), agreement_rows AS (
  INSERT INTO agreements (supply_point_id, position, tariff_code, effective_from)
  SELECT k.id, e.n - 1, e.j ->> 'tariff_code', (e.j ->> 'effective_from')::date
  FROM point_keys k, jsonb_array_elements(coalesce(k.j -> 'agreements', '[]')) WITH ORDINALITY AS e(j, n)
), reading_rows AS (
  INSERT INTO transfer_readings (supply_point_id, position, register_type, read_date, value)
  SELECT k.id, e.n - 1, e.j ->> 'register_type', (e.j ->> 'read_date')::date, (e.j ->> 'value')::numeric
  FROM point_keys k, jsonb_array_elements(coalesce(k.j -> 'transfer_readings', '[]')) WITH ORDINALITY AS e(j, n)
), meter_source AS (
  SELECT k.id AS point_id, (e.n - 1)::int AS position, e.j
  FROM point_keys k, jsonb_array_elements(coalesce(k.j -> 'meters', '[]')) WITH ORDINALITY AS e(j, n)
  WHERE k.j ->> 'supply_type' = 'ELECTRICITY'
), meter_rows AS (
  INSERT INTO meters (supply_point_id, position, serial_number, subgroup, seal_date, meter_number, status, active_from, meter_type)
  SELECT point_id, position, j ->> 'serial_number', (j ->> 'subgroup')::int, (j ->> 'seal_date')::date, (j ->> 'meter_number')::int,
    j ->> 'status', (j ->> 'active_from')::date, j -> 'meter_type'
  FROM meter_source
  RETURNING id, supply_point_id, position
), register_rows AS (
  INSERT INTO registers (meter_id, position, register_type, whole_digits, decimal_digits, active_from, multiplier)
  SELECT m.id, r.n - 1, r.j ->> 'register_type', (r.j ->> 'whole_digits')::int, (r.j ->> 'decimal_digits')::int,
    (r.j ->> 'active_from')::date, (r.j ->> 'multiplier')::numeric
  FROM meter_rows m JOIN meter_source ms ON ms.point_id = m.supply_point_id AND ms.position = m.position
    CROSS JOIN LATERAL jsonb_array_elements(ms.j -> 'registers') WITH ORDINALITY AS r(j, n)
), note_rows AS (
  INSERT INTO notes (account_id, body, document_paths, created_at, is_pinned, unpin_at)
  SELECT a.id, e.j ->> 'body', coalesce(jsonb_path_query_array(e.j -> 'document_paths', '$[*].document_path'), '[]'),
    coalesce((e.j ->> 'created_at')::timestamptz, now()), coalesce((e.j ->> 'is_pinned')::boolean, false), (e.j ->> 'unpin_at')::timestamptz
  FROM account a, staged s, jsonb_array_elements(coalesce(s.data -> 'notes', '[]')) WITH ORDINALITY AS e(j, n)
), linked AS (
  UPDATE account_imports ai SET account_id = a.id FROM account a, staged s WHERE ai.id = s.id
), attempt AS (
  INSERT INTO create_attempts (supplier_id, external_account_number, dry_run, outcome, started_at)
  SELECT $1, $2, false, 'created', $5 FROM account
), event AS (
  INSERT INTO events (supplier_id, type, external_account_number, data)
  SELECT $1, 'import_process.completed', $2, jsonb_build_object('service_account_number', $3::text,
    'account_created_at', to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
  FROM account a
)
SELECT id FROM account`;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const accountNumber = () => `A-${Array.from({ length: 8 }, () => ALPHABET[randomInt(36)]).join('')}`;

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
const pending = (await db.query<{ external_account_number: string }>(
  'SELECT external_account_number FROM account_imports WHERE supplier_id = $1 AND account_id IS NULL ORDER BY id', [input.supplierId]))
  .map((r) => r.external_account_number);
const result = await runLoops(input.connections, input.warmupSeconds, input.seconds, async (n) => {
  const external = pending[n];
  if (external === undefined) return false;
  const made = await db.prepared('floor_create', CREATE, [input.supplierId, external, accountNumber(), input.teamId, new Date()]);
  if (made.length !== 1) throw new Error(`not created (not staged?): ${external}`);
  return true;
});
await db.close();
process.stdout.write(`${JSON.stringify({ ...result, available: pending.length })}\n`);
