import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';

// The queries of the account read endpoint. Each is bounded by one account.
type Db = Kysely<Database>;

export function findAccountWithTeam(db: Db, supplierId: number, externalAccountNumber: string) {
  return db.selectFrom('accounts')
    .innerJoin('operations_teams', 'operations_teams.id', 'accounts.operations_team_id')
    .select([
      'accounts.id', 'accounts.number', 'accounts.external_account_number', 'accounts.created_at', 'accounts.unknown_occupier',
      'accounts.billing_street_address', 'accounts.billing_locality', 'accounts.billing_administrative_area',
      'accounts.billing_country', 'accounts.billing_postal_code', 'operations_teams.name as team',
    ])
    .where('accounts.supplier_id', '=', supplierId).where('accounts.external_account_number', '=', externalAccountNumber)
    .executeTakeFirst();
}

export function findCustomers(db: Db, accountId: number) {
  return db.selectFrom('customers').select(['given_name', 'family_name', 'email', 'mobile', 'landline'])
    .where('account_id', '=', accountId).orderBy('position').execute();
}

export function findSupplyAddresses(db: Db, accountId: number) {
  return db.selectFrom('supply_addresses')
    .select(['id', 'supply_address1', 'supply_address2', 'supply_address3', 'supply_address4', 'supply_postcode', 'customer_at_supply_address_from_date'])
    .where('account_id', '=', accountId).orderBy('position').execute();
}

/** Supply points with how many agreements, meters and registers each has (counted in SQL). */
export function findSupplyPoints(db: Db, accountId: number) {
  return db.selectFrom('supply_points as sp')
    .select([
      'sp.supply_address_id', 'sp.supply_type', 'sp.identifier', 'sp.supply_start_date', 'sp.last_billed_to_date',
      sql<number>`(select count(*) from agreements a where a.supply_point_id = sp.id)::int`.as('agreements_count'),
      sql<number>`(select count(*) from meters m where m.supply_point_id = sp.id)::int`.as('meters_count'),
      sql<number>`(select count(*) from registers r join meters m on m.id = r.meter_id where m.supply_point_id = sp.id)::int`.as('registers_count'),
    ])
    .where('sp.account_id', '=', accountId).orderBy('sp.supply_address_id').orderBy('sp.position').execute();
}

export function findActivePaymentInstruction(db: Db, accountId: number) {
  return db.selectFrom('payment_instructions')
    .innerJoin('payment_vendors', 'payment_vendors.id', 'payment_instructions.vendor_id')
    .select(['payment_vendors.code as vendor', 'payment_instructions.reference', 'payment_instructions.type',
      'payment_instructions.status', 'payment_instructions.details', 'payment_instructions.created_at'])
    .where('payment_instructions.account_id', '=', accountId).where('payment_instructions.active', '=', true)
    .executeTakeFirst();
}

/**
 * Everything the service keeps of an account's tree below its account row, for drift: its metadata,
 * its customers, its supply points and every row below them (each with the id its children name), in
 * position order.
 */
export async function findStoredTree(db: Db, accountId: number) {
  const points = db.selectFrom('supply_points').select('id').where('account_id', '=', accountId);
  const [account, customers, supplyPoints, agreements, meters, registers, readings] = [
    await db.selectFrom('accounts').select('metadata').where('id', '=', accountId).executeTakeFirstOrThrow(),
    await db.selectFrom('customers').selectAll().where('account_id', '=', accountId).orderBy('position').execute(),
    await db.selectFrom('supply_points').selectAll().where('account_id', '=', accountId).orderBy('supply_address_id').orderBy('position').execute(),
    await db.selectFrom('agreements').selectAll().where('supply_point_id', 'in', points).orderBy('supply_point_id').orderBy('position').execute(),
    await db.selectFrom('meters').selectAll().where('supply_point_id', 'in', points).orderBy('supply_point_id').orderBy('position').execute(),
    await db.selectFrom('registers').selectAll()
      .where('meter_id', 'in', db.selectFrom('meters').select('id').where('supply_point_id', 'in', points))
      .orderBy('meter_id').orderBy('position').execute(),
    await db.selectFrom('transfer_readings').selectAll().where('supply_point_id', 'in', points).orderBy('supply_point_id').orderBy('position').execute(),
  ];
  return { metadata: account.metadata, customers, points: supplyPoints, agreements, meters, registers, readings };
}
