import { sql, type Insertable, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely';
import type {
  AccountsTable, AgreementsTable, CustomersTable, Database, MetersTable, NotesTable, RegistersTable, SupplyAddressesTable,
  SupplyPointsTable, TransferReadingsTable,
} from '../../db/schema.ts';
import { SERVER_PREPARED } from '../../db/server-prepared.ts';

// Writes created accounts: each account row and everything under it (customers, addresses, points,
// agreements, meters, registers, transfer readings, notes) and its import's link to it, for a whole
// set of accounts (a migration job's chunk; a create is a set of one) in ONE statement of
// data-modifying CTEs. A statement costs a round trip to the database whatever its size, and per
// round trip is where a create spent its time (docs/performance.md). Each table's rows travel as one
// jsonb parameter read through the table's own row type (jsonb_populate_record), so there is no
// bind-parameter limit to batch around. Children find their parent by position: an account by its
// place in the set (`acct`), an address by `acct/address`, a point by `acct/address/point`, a
// meter by `acct/address/point/meter` (each one text key, so that each join is on one column, which
// PostgreSQL estimates sanely and hashes), joined to the parents' RETURNING rows. Rows are inserted in
// the order given, so ids follow positions. An account whose number is taken already is not
// inserted (ON CONFLICT (number) DO NOTHING), so nothing under it finds its parent and nothing of it
// is written: the caller draws it another number and writes it again. Any other unique conflict (an
// electricity identifier on another account) fails the statement. The parents' keys are MATERIALIZED:
// a key CTE read once would be inlined into its children's join, and PostgreSQL, taking the RETURNING
// rows for one, then joined a chunk's registers to every meter of the same position before their
// points (4.5 million rows compared, 450 ms, for a chunk of 50); read as a whole, each is hashed once.
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

/** The account row of a new account: `metadata` as its value (stored as jsonb), `[]` when absent. */
export type NewAccountRow = Omit<Insertable<AccountsTable>, 'metadata'> & { metadata?: unknown };

/** An account of a set with its tree's rows. */
export interface AccountWithTree { account: NewAccountRow; rows: AccountTreeRows }

/**
 * The rows of one table as a source for its INSERT … SELECT: `e.j` each row's JSON, `e.n` its place
 * (the order of insertion), `r` the row read through the table's own row type.
 */
function rowsOf(table: keyof Database, rows: unknown[]) {
  return sql`jsonb_array_elements(${JSON.stringify(rows)}::jsonb) WITH ORDINALITY AS e(j, n)
    CROSS JOIN LATERAL jsonb_populate_record(NULL::${sql.table(table)}, e.j) AS r`;
}

/**
 * Each account's rows of one kind, in account order, each with the key of its parent: `acct` (its
 * account's place in the set), `ak` (its address's), `pk` (its point's) or `mk` (its meter's).
 */
function ofSet<K extends keyof AccountTreeRows>(set: readonly AccountWithTree[], kind: K): unknown[] {
  return set.flatMap(({ rows }, acct) => (rows[kind] as Array<Record<string, unknown>>).map((row) => {
    if (row.meter !== undefined) return { mk: `${acct}/${row.address}/${row.point}/${row.meter}`, ...row };
    if (row.point !== undefined) return kind === 'points' ? { ak: `${acct}/${row.address}`, ...row } : { pk: `${acct}/${row.address}/${row.point}`, ...row };
    return { acct, ...row };
  }));
}

/** The account a row names by its place in the set, among `account_keys` as `k`. */
const ACCOUNT_OF_ROW = sql`k.acct = (e.j->>'acct')::int`;

/**
 * The accounts, their trees and their imports' links, in ONE statement, with `also`: more writes
 * that must commit with the accounts (the create's attempt and its event), each run as a CTE of the
 * statement over the accounts it wrote, `account_keys` (id, acct, number, created_at, supplier_id,
 * external_account_number), so that an account whose number was taken has none of them either.
 * With a `gate` (a SELECT, run first as the CTE `gate`), nothing at all is written unless it returns
 * a row: the statement then runs alone on `db`, committing by itself, and the gate takes in it what
 * a transaction would have taken before (the create's locks, createGate). For each account of `set`
 * in its order: its id and creation time, or undefined (and nothing of it written) when its number
 * is taken already (by a stored account or by an earlier account of the set): the caller draws
 * another, with no failed statement to roll back. The statement's text is the same whatever the
 * set's size (every row is in a jsonb parameter), so it is prepared once per connection. The imports'
 * links are found by the range of the set's import ids: a set's imports are staged together (a
 * create's one, a chunk's in one statement), so the range holds few others.
 */
export async function insertAccountsWithTrees(
  trx: Trx | Kysely<Database>, set: readonly AccountWithTree[], also: readonly RawBuilder<unknown>[] = [], gate?: RawBuilder<unknown>,
): Promise<Array<{ id: number; created_at: Date } | undefined>> {
  if (set.length === 0) return [];
  const accounts = set.map(({ account }, acct) => ({ acct, ...account }));
  const { rows: made } = await sql<{ acct: number; id: number; created_at: Date }>`${sql.raw(SERVER_PREPARED)}
    WITH ${gate ? sql`gate AS MATERIALIZED (${gate}), ` : sql``}account_rows AS (
      SELECT e.n, (e.j->>'acct')::int AS acct, r.*
      FROM ${rowsOf('accounts', accounts)}
    ), account AS (
      INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number, operations_team_id,
        billing_street_address, billing_locality, billing_administrative_area, billing_country, billing_postal_code,
        unknown_occupier, metadata)
      SELECT a.number, a.account_import_id, a.supplier_id, a.external_account_number, a.operations_team_id,
        a.billing_street_address, a.billing_locality, a.billing_administrative_area, a.billing_country, a.billing_postal_code,
        a.unknown_occupier, coalesce(a.metadata, '[]')
      FROM account_rows a
      ${gate ? sql`WHERE EXISTS (SELECT 1 FROM gate)` : sql``}
      ORDER BY a.n
      ON CONFLICT (number) DO NOTHING
      RETURNING id, created_at, account_import_id, number, supplier_id, external_account_number
    ), account_keys AS MATERIALIZED (
      -- The accounts inserted, by their place in the set (an import is created once: its id is unique).
      SELECT a.id, a.created_at, a.account_import_id, s.acct, a.number, a.supplier_id, a.external_account_number
      FROM account a JOIN account_rows s ON s.account_import_id = a.account_import_id
    ), ${sql.join(also.map((statement, i) => sql`${sql.ref(`also_${i}`)} AS (${statement}), `), sql``)}customer_rows AS (
      INSERT INTO customers (account_id, position, given_name, family_name, email, mobile, landline, alternative_phone_numbers,
        date_of_birth, opted_into_updates, opted_into_offers, opted_into_sms)
      SELECT k.id, r.position, r.given_name, r.family_name, r.email, r.mobile, r.landline,
        coalesce(r.alternative_phone_numbers, '[]'), r.date_of_birth, r.opted_into_updates, r.opted_into_offers, r.opted_into_sms
      FROM ${rowsOf('customers', ofSet(set, 'customers'))} JOIN account_keys k ON ${ACCOUNT_OF_ROW}
      ORDER BY e.n
    ), addresses AS (
      INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3, supply_address4,
        supply_postcode, customer_at_supply_address_from_date)
      SELECT k.id, r.position, r.supply_address1, r.supply_address2, r.supply_address3, r.supply_address4,
        r.supply_postcode, r.customer_at_supply_address_from_date
      FROM ${rowsOf('supply_addresses', ofSet(set, 'addresses'))} JOIN account_keys k ON ${ACCOUNT_OF_ROW}
      ORDER BY e.n
      RETURNING id, account_id, position
    ), address_keys AS MATERIALIZED (
      SELECT a.id, a.account_id, k.acct || '/' || a.position AS ak FROM addresses a JOIN account_keys k ON k.id = a.account_id
    ), points AS (
      INSERT INTO supply_points (account_id, supply_address_id, position, supply_type, supply_start_date, last_billed_to_date,
        identifier, details)
      SELECT a.account_id, a.id, (e.j->>'point')::int, r.supply_type, r.supply_start_date, r.last_billed_to_date,
        r.identifier, coalesce(r.details, '{}')
      FROM ${rowsOf('supply_points', ofSet(set, 'points'))}
        JOIN address_keys a ON a.ak = e.j->>'ak'
      ORDER BY e.n
      RETURNING id, supply_address_id, position
    ), point_keys AS MATERIALIZED (
      SELECT p.id, a.ak || '/' || p.position AS pk FROM points p JOIN address_keys a ON a.id = p.supply_address_id
    ), agreement_rows AS (
      INSERT INTO agreements (supply_point_id, position, tariff_code, effective_from)
      SELECT k.id, r.position, r.tariff_code, r.effective_from
      FROM ${rowsOf('agreements', ofSet(set, 'agreements'))} JOIN point_keys k ON k.pk = e.j->>'pk'
      ORDER BY e.n
    ), reading_rows AS (
      INSERT INTO transfer_readings (supply_point_id, position, register_type, read_date, value)
      SELECT k.id, r.position, r.register_type, r.read_date, r.value
      FROM ${rowsOf('transfer_readings', ofSet(set, 'readings'))} JOIN point_keys k ON k.pk = e.j->>'pk'
      ORDER BY e.n
    ), meter_rows AS (
      INSERT INTO meters (supply_point_id, position, serial_number, subgroup, seal_date, meter_number, status, active_from, meter_type)
      SELECT k.id, r.position, r.serial_number, r.subgroup, r.seal_date, r.meter_number, r.status, r.active_from, r.meter_type
      FROM ${rowsOf('meters', ofSet(set, 'meters'))} JOIN point_keys k ON k.pk = e.j->>'pk'
      ORDER BY e.n
      RETURNING id, supply_point_id, position
    ), meter_keys AS MATERIALIZED (
      SELECT m.id, k.pk || '/' || m.position AS mk FROM meter_rows m JOIN point_keys k ON k.id = m.supply_point_id
    ), register_rows AS (
      INSERT INTO registers (meter_id, position, register_type, whole_digits, decimal_digits, active_from, multiplier)
      SELECT k.id, r.position, r.register_type, r.whole_digits, r.decimal_digits, r.active_from, r.multiplier
      FROM ${rowsOf('registers', ofSet(set, 'registers'))} JOIN meter_keys k ON k.mk = e.j->>'mk'
      ORDER BY e.n
    ), note_rows AS (
      INSERT INTO notes (account_id, body, document_paths, created_at, is_pinned, unpin_at)
      SELECT k.id, r.body, coalesce(r.document_paths, '[]'), coalesce(r.created_at, now()), coalesce(r.is_pinned, false), r.unpin_at
      FROM ${rowsOf('notes', ofSet(set, 'notes'))} JOIN account_keys k ON ${ACCOUNT_OF_ROW}
      ORDER BY e.n
    )
    -- The imports read through their key's index: by the range of their ids (the set's imports were
    -- staged together, so the range holds little else), which a generic plan reads by the index
    -- whatever the table's size; a join alone is planned as a scan of a small table, kept as it grows.
    UPDATE account_imports ai SET account_id = k.id FROM account_keys k
    WHERE ai.id BETWEEN (SELECT min(account_import_id) FROM account_keys) AND (SELECT max(account_import_id) FROM account_keys)
      AND ai.id = k.account_import_id
    RETURNING k.acct, k.id, k.created_at`.execute(trx);
  const byPlace = new Map(made.map((row) => [row.acct, { id: row.id, created_at: row.created_at }]));
  return set.map((_, acct) => byPlace.get(acct));
}

/**
 * One account, its tree and the import's link (the set statement, for a set of one), or undefined
 * (and nothing written) when the account's number is taken already.
 */
export async function insertAccountWithTree(
  trx: Trx, account: NewAccountRow, rows: AccountTreeRows,
): Promise<{ id: number; created_at: Date } | undefined> {
  return (await insertAccountsWithTrees(trx, [{ account, rows }]))[0];
}

/** Electricity identifiers among `identifiers` that are already on an account. */
export async function findRegisteredIdentifiers(db: Kysely<Database>, identifiers: string[]): Promise<Set<string>> {
  if (identifiers.length === 0) return new Set<string>();
  const rows = await db.selectFrom('supply_points').select('identifier')
    .where('identifier', 'in', identifiers).execute();
  return new Set(rows.map((r) => r.identifier!));
}
