import type { Insertable, Kysely, Transaction } from 'kysely';
import { rowBatches } from '../../db/row-batches.ts';
import type {
  AccountsTable, AgreementsTable, CustomersTable, Database, MetersTable, RegistersTable, SupplyAddressesTable,
  SupplyPointsTable, TransferReadingsTable,
} from '../../db/schema.ts';

// Writes a created account's rows: one multi-row INSERT per table (batched only past PostgreSQL's
// bind-parameter limit), so an account costs about ten statements however many rows it has.
// Children find their parent's id by position, from the parents' RETURNING rows.
type Trx = Transaction<Database>;

/** Undefined when the number is taken already (the caller draws another): no failed statement. */
export async function insertAccount(trx: Trx, row: Insertable<AccountsTable>) {
  return trx.insertInto('accounts').values(row)
    .onConflict((oc) => oc.column('number').doNothing())
    .returning(['id', 'created_at'])
    .executeTakeFirst();
}

export async function insertCustomers(trx: Trx, rows: Insertable<CustomersTable>[]): Promise<void> {
  for (const batch of rowBatches(rows)) await trx.insertInto('customers').values(batch).execute();
}

/** Ids of the inserted addresses, indexed by position. */
export async function insertSupplyAddresses(trx: Trx, rows: Insertable<SupplyAddressesTable>[]): Promise<number[]> {
  const ids: number[] = [];
  for (const batch of rowBatches(rows)) {
    const returned = await trx.insertInto('supply_addresses').values(batch).returning(['id', 'position']).execute();
    for (const r of returned) ids[r.position] = r.id;
  }
  return ids;
}

/** Ids of the inserted points, keyed `${supply_address_id}:${position}`. */
export async function insertSupplyPoints(trx: Trx, rows: Insertable<SupplyPointsTable>[]): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  for (const batch of rowBatches(rows)) {
    const returned = await trx.insertInto('supply_points').values(batch)
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

export async function insertAgreements(trx: Trx, rows: Insertable<AgreementsTable>[]): Promise<void> {
  for (const batch of rowBatches(rows)) await trx.insertInto('agreements').values(batch).execute();
}

/** Ids of the inserted meters, keyed `${supply_point_id}:${position}`. */
export async function insertMeters(trx: Trx, rows: Insertable<MetersTable>[]): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  for (const batch of rowBatches(rows)) {
    const returned = await trx.insertInto('meters').values(batch).returning(['id', 'supply_point_id', 'position']).execute();
    for (const r of returned) ids.set(`${r.supply_point_id}:${r.position}`, r.id);
  }
  return ids;
}

export async function insertRegisters(trx: Trx, rows: Insertable<RegistersTable>[]): Promise<void> {
  for (const batch of rowBatches(rows)) await trx.insertInto('registers').values(batch).execute();
}

export async function insertTransferReadings(trx: Trx, rows: Insertable<TransferReadingsTable>[]): Promise<void> {
  for (const batch of rowBatches(rows)) await trx.insertInto('transfer_readings').values(batch).execute();
}
