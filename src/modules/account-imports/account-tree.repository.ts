import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';

// Writes a created account's rows: one multi-row INSERT per table (chunked only past PostgreSQL's
// bind-parameter limit), so an account costs about ten statements however many rows it has.
// Children find their parent's id by position, from the parents' RETURNING rows.
type Trx = Transaction<Database>;

/** PostgreSQL takes at most 65535 bind parameters per statement. */
const MAX_PARAMETERS = 60_000;

function chunksOf<T>(rows: T[], columns: number): T[][] {
  const size = Math.max(1, Math.floor(MAX_PARAMETERS / columns));
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

export interface AccountRow {
  number: string; account_import_id: number; supplier_id: number; external_account_number: string;
  operations_team_id: number; billing_street_address: string; billing_locality: string | null;
  billing_administrative_area: string | null; billing_country: string; billing_postal_code: string;
  unknown_occupier: boolean | null; metadata: string;
}

/** Undefined when the number is taken already (the caller draws another): no failed statement. */
export async function insertAccount(trx: Trx, row: AccountRow) {
  return trx.insertInto('accounts').values(row)
    .onConflict((oc) => oc.column('number').doNothing())
    .returning(['id', 'created_at'])
    .executeTakeFirst();
}

export interface CustomerRow {
  account_id: number; position: number; given_name: string; family_name: string; email: string | null;
  mobile: string | null; landline: string | null; alternative_phone_numbers: string; date_of_birth: string | null;
  opted_into_updates: boolean | null; opted_into_offers: boolean | null; opted_into_sms: boolean | null;
}

export async function insertCustomers(trx: Trx, rows: CustomerRow[]): Promise<void> {
  for (const chunk of chunksOf(rows, 12)) await trx.insertInto('customers').values(chunk).execute();
}

export interface SupplyAddressRow {
  account_id: number; position: number; supply_address1: string; supply_address2: string | null;
  supply_address3: string | null; supply_address4: string | null; supply_postcode: string;
  customer_at_supply_address_from_date: string | null;
}

/** Ids of the inserted addresses, indexed by position. */
export async function insertSupplyAddresses(trx: Trx, rows: SupplyAddressRow[]): Promise<number[]> {
  const ids: number[] = [];
  for (const chunk of chunksOf(rows, 8)) {
    const returned = await trx.insertInto('supply_addresses').values(chunk).returning(['id', 'position']).execute();
    for (const r of returned) ids[r.position] = r.id;
  }
  return ids;
}

export interface SupplyPointRow {
  account_id: number; supply_address_id: number; position: number; supply_type: string; supply_start_date: string;
  last_billed_to_date: string | null; identifier: string | null; details: string;
}

/** Ids of the inserted points, keyed `${supply_address_id}:${position}`. */
export async function insertSupplyPoints(trx: Trx, rows: SupplyPointRow[]): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  for (const chunk of chunksOf(rows, 8)) {
    const returned = await trx.insertInto('supply_points').values(chunk)
      .returning(['id', 'supply_address_id', 'position']).execute();
    for (const r of returned) ids.set(`${r.supply_address_id}:${r.position}`, r.id);
  }
  return ids;
}

/** Electricity identifiers among `identifiers` that are already on an account. */
export async function findRegisteredIdentifiers(db: Kysely<Database>, identifiers: string[]): Promise<Set<string>> {
  if (identifiers.length === 0) return new Set<string>();
  const rows = await db.selectFrom('supply_points').select('identifier')
    .where('identifier', 'in', identifiers).execute();
  return new Set(rows.map((r) => r.identifier!));
}

export interface AgreementRow { supply_point_id: number; position: number; tariff_code: string; effective_from: string }

export async function insertAgreements(trx: Trx, rows: AgreementRow[]): Promise<void> {
  for (const chunk of chunksOf(rows, 4)) await trx.insertInto('agreements').values(chunk).execute();
}

export interface MeterRow {
  supply_point_id: number; position: number; serial_number: string; subgroup: number | null; seal_date: string | null;
  meter_number: number | null; status: string | null; active_from: string | null; meter_type: string | null;
}

/** Ids of the inserted meters, keyed `${supply_point_id}:${position}`. */
export async function insertMeters(trx: Trx, rows: MeterRow[]): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  for (const chunk of chunksOf(rows, 9)) {
    const returned = await trx.insertInto('meters').values(chunk).returning(['id', 'supply_point_id', 'position']).execute();
    for (const r of returned) ids.set(`${r.supply_point_id}:${r.position}`, r.id);
  }
  return ids;
}

export interface RegisterRow {
  meter_id: number; position: number; register_type: string; whole_digits: number | null;
  decimal_digits: number | null; active_from: string | null; multiplier: string | null;
}

export async function insertRegisters(trx: Trx, rows: RegisterRow[]): Promise<void> {
  for (const chunk of chunksOf(rows, 7)) await trx.insertInto('registers').values(chunk).execute();
}

export interface TransferReadingRow {
  supply_point_id: number; position: number; register_type: string; read_date: string; value: string;
}

export async function insertTransferReadings(trx: Trx, rows: TransferReadingRow[]): Promise<void> {
  for (const chunk of chunksOf(rows, 5)) await trx.insertInto('transfer_readings').values(chunk).execute();
}

