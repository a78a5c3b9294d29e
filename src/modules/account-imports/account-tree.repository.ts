import { sql, type Insertable, type Kysely, type Selectable, type Transaction } from 'kysely';
import type {
  AccountsTable, AgreementsTable, CustomersTable, Database, MetersTable, NotesTable, RegistersTable, SupplyAddressesTable,
  SupplyPointsTable, TransferReadingsTable,
} from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';

// Writes a created account: the account row and everything under it (customers, addresses, points,
// agreements, meters, registers, transfer readings, notes) and the import's link to it, in ONE
// statement of data-modifying CTEs. A statement costs a round trip to the database whatever its size,
// and per round trip is where a create spent its time (docs/performance.md). Each table's rows
// travel as one jsonb parameter read through the table's own row type (jsonb_populate_record), so
// there is no bind-parameter limit to batch around. Children find their parent by position: an
// address by its position, a point by (address, point), a meter by (address, point, meter), joined
// to the parents' RETURNING rows. Rows are inserted in the order given, so ids follow positions.
type Trx = Transaction<Database>;

/** A row of `T` as stored (jsonb columns as values, not text), without its ids and parent keys. */
type RowOf<T, Omitted extends keyof Selectable<T>> = Omit<Selectable<T>, 'id' | Omitted>;
interface AddressKey { address: number }
interface PointKey extends AddressKey { point: number }

export interface AccountTreeRows {
  customers: RowOf<CustomersTable, 'account_id'>[];
  addresses: RowOf<SupplyAddressesTable, 'account_id'>[];
  points: Array<RowOf<SupplyPointsTable, 'account_id' | 'supply_address_id' | 'position'> & PointKey>;
  agreements: Array<RowOf<AgreementsTable, 'supply_point_id'> & PointKey>;
  meters: Array<RowOf<MetersTable, 'supply_point_id'> & PointKey>;
  registers: Array<RowOf<RegistersTable, 'meter_id'> & PointKey & { meter: number }>;
  readings: Array<RowOf<TransferReadingsTable, 'supply_point_id'> & PointKey>;
  /** `created_at` null: the transaction's time. */
  notes: Array<Omit<RowOf<NotesTable, 'account_id' | 'inserted_at'>, 'created_at'> & { created_at: string | null }>;
}

/**
 * The rows of one table as a source for its INSERT … SELECT: `e.j` each row's JSON, `e.n` its place
 * (the order of insertion), `r` the row read through the table's own row type.
 */
function rowsOf(table: keyof Database, rows: unknown[]) {
  return sql`jsonb_array_elements(${JSON.stringify(rows)}::jsonb) WITH ORDINALITY AS e(j, n)
    CROSS JOIN LATERAL jsonb_populate_record(NULL::${sql.table(table)}, e.j) AS r`;
}

/** The supply point a row names by (address, point), among `point_keys` as `k`. */
const POINT_OF_ROW = sql`k.address = (e.j->>'address')::int AND k.point = (e.j->>'point')::int`;

/**
 * The account, its tree and the import's link, or undefined (and nothing written) when the account's
 * number is taken already: the caller draws another, with no failed statement to roll back.
 */
export async function insertAccountWithTree(
  trx: Trx, account: Insertable<AccountsTable>, rows: AccountTreeRows,
): Promise<{ id: number; created_at: Date } | undefined> {
  const { rows: made } = await sql<{ id: number; created_at: Date }>`${sql.raw(SERVER_PREPARED)}
    WITH account AS (
      ${trx.insertInto('accounts').values(account).onConflict((oc) => oc.column('number').doNothing()).returning(['id', 'created_at'])}
    ), customer_rows AS (
      INSERT INTO customers (account_id, position, given_name, family_name, email, mobile, landline, alternative_phone_numbers,
        date_of_birth, opted_into_updates, opted_into_offers, opted_into_sms)
      SELECT account.id, r.position, r.given_name, r.family_name, r.email, r.mobile, r.landline,
        coalesce(r.alternative_phone_numbers, '[]'), r.date_of_birth, r.opted_into_updates, r.opted_into_offers, r.opted_into_sms
      FROM account CROSS JOIN ${rowsOf('customers', rows.customers)}
      ORDER BY e.n
    ), addresses AS (
      INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3, supply_address4,
        supply_postcode, customer_at_supply_address_from_date)
      SELECT account.id, r.position, r.supply_address1, r.supply_address2, r.supply_address3, r.supply_address4,
        r.supply_postcode, r.customer_at_supply_address_from_date
      FROM account CROSS JOIN ${rowsOf('supply_addresses', rows.addresses)}
      ORDER BY e.n
      RETURNING id, account_id, position
    ), points AS (
      INSERT INTO supply_points (account_id, supply_address_id, position, supply_type, supply_start_date, last_billed_to_date,
        identifier, details)
      SELECT a.account_id, a.id, (e.j->>'point')::int, r.supply_type, r.supply_start_date, r.last_billed_to_date,
        r.identifier, coalesce(r.details, '{}')
      FROM ${rowsOf('supply_points', rows.points)}
        JOIN addresses a ON a.position = (e.j->>'address')::int
      ORDER BY e.n
      RETURNING id, supply_address_id, position
    ), point_keys AS (
      SELECT p.id, a.position AS address, p.position AS point FROM points p JOIN addresses a ON a.id = p.supply_address_id
    ), agreement_rows AS (
      INSERT INTO agreements (supply_point_id, position, tariff_code, effective_from)
      SELECT k.id, r.position, r.tariff_code, r.effective_from
      FROM ${rowsOf('agreements', rows.agreements)} JOIN point_keys k ON ${POINT_OF_ROW}
      ORDER BY e.n
    ), reading_rows AS (
      INSERT INTO transfer_readings (supply_point_id, position, register_type, read_date, value)
      SELECT k.id, r.position, r.register_type, r.read_date, r.value
      FROM ${rowsOf('transfer_readings', rows.readings)} JOIN point_keys k ON ${POINT_OF_ROW}
      ORDER BY e.n
    ), meter_rows AS (
      INSERT INTO meters (supply_point_id, position, serial_number, subgroup, seal_date, meter_number, status, active_from, meter_type)
      SELECT k.id, r.position, r.serial_number, r.subgroup, r.seal_date, r.meter_number, r.status, r.active_from, r.meter_type
      FROM ${rowsOf('meters', rows.meters)} JOIN point_keys k ON ${POINT_OF_ROW}
      ORDER BY e.n
      RETURNING id, supply_point_id, position
    ), meter_keys AS (
      SELECT m.id, k.address, k.point, m.position AS meter FROM meter_rows m JOIN point_keys k ON k.id = m.supply_point_id
    ), register_rows AS (
      INSERT INTO registers (meter_id, position, register_type, whole_digits, decimal_digits, active_from, multiplier)
      SELECT k.id, r.position, r.register_type, r.whole_digits, r.decimal_digits, r.active_from, r.multiplier
      FROM ${rowsOf('registers', rows.registers)} JOIN meter_keys k ON ${POINT_OF_ROW} AND k.meter = (e.j->>'meter')::int
      ORDER BY e.n
    ), note_rows AS (
      INSERT INTO notes (account_id, body, document_paths, created_at, is_pinned, unpin_at)
      SELECT account.id, r.body, coalesce(r.document_paths, '[]'), coalesce(r.created_at, now()), coalesce(r.is_pinned, false), r.unpin_at
      FROM account CROSS JOIN ${rowsOf('notes', rows.notes)}
      ORDER BY e.n
    )
    UPDATE account_imports ai SET account_id = account.id FROM account WHERE ai.id = ${account.account_import_id}
    RETURNING account.id, account.created_at`.execute(trx);
  return made[0];
}

/** Electricity identifiers among `identifiers` that are already on an account. */
export async function findRegisteredIdentifiers(db: Kysely<Database>, identifiers: string[]): Promise<Set<string>> {
  if (identifiers.length === 0) return new Set<string>();
  const rows = await db.selectFrom('supply_points').select('identifier')
    .where('identifier', 'in', identifiers).execute();
  return new Set(rows.map((r) => r.identifier!));
}
