import type { Insertable, Transaction } from 'kysely';
import type { AgreementsTable, Database, MetersTable, TransferReadingsTable } from '../../db/schema.ts';
import type { AccountData, Register, SupplyPoint } from '../account-data/account-data.schemas.ts';
import { insertNotes } from '../notes/notes.repository.ts';
import * as tree from './account-tree.repository.ts';

// Maps validated account data onto the rows of a new account, one table at a time: the parents of a
// level are inserted together, and their RETURNING ids give the children their foreign keys.

/** Fields kept as columns of supply_points or as rows of their own; everything else is `details`. */
const POINT_COLUMNS = new Set([
  'supply_type', 'supply_start_date', 'last_billed_to_date', 'agreements', 'identifier', 'meters', 'transfer_readings',
]);

function detailsOf(point: SupplyPoint): Record<string, unknown> {
  return Object.fromEntries(Object.entries(point).filter(([key]) => !POINT_COLUMNS.has(key)));
}

const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

export interface PointRef { addressIndex: number; pointIndex: number; point: SupplyPoint }

/** Every supply point with its place in the payload (for `attr` paths). */
export function supplyPointsOf(data: AccountData): PointRef[] {
  return data.supply_addresses.flatMap((address, addressIndex) =>
    address.supply_points.map((point, pointIndex) => ({ addressIndex, pointIndex, point })));
}

export async function writeAccountTree(trx: Transaction<Database>, accountId: number, data: AccountData): Promise<void> {
  await tree.insertCustomers(trx, data.customers.map((c, position) => ({
    account_id: accountId,
    position,
    given_name: c.given_name,
    family_name: c.family_name,
    email: orNull(c.email),
    mobile: orNull(c.mobile),
    landline: orNull(c.landline),
    alternative_phone_numbers: JSON.stringify(c.alternative_phone_numbers ?? []),
    date_of_birth: orNull(c.date_of_birth),
    opted_into_updates: orNull(c.customer_preferences?.opted_into_updates),
    opted_into_offers: orNull(c.customer_preferences?.opted_into_offers),
    opted_into_sms: orNull(c.customer_preferences?.opted_into_sms),
  })));

  const addressIds = await tree.insertSupplyAddresses(trx, data.supply_addresses.map((a, position) => ({
    account_id: accountId,
    position,
    supply_address1: a.supply_address1,
    supply_address2: orNull(a.supply_address2),
    supply_address3: orNull(a.supply_address3),
    supply_address4: orNull(a.supply_address4),
    supply_postcode: a.supply_postcode,
    customer_at_supply_address_from_date: orNull(a.customer_at_supply_address_from_date),
  })));

  const points = supplyPointsOf(data).map((ref) => ({ ...ref, addressId: addressIds[ref.addressIndex]! }));
  const pointIds = await tree.insertSupplyPoints(trx, points.map(({ point, pointIndex, addressId }) => ({
    account_id: accountId,
    supply_address_id: addressId,
    position: pointIndex,
    supply_type: point.supply_type,
    supply_start_date: point.supply_start_date,
    last_billed_to_date: orNull(point.last_billed_to_date),
    identifier: point.supply_type === 'ELECTRICITY' ? point.identifier : null,
    details: JSON.stringify(detailsOf(point)),
  })));
  const pointIdOf = (addressId: number, pointIndex: number) => pointIds.get(`${addressId}:${pointIndex}`)!;

  const agreements: Insertable<AgreementsTable>[] = [];
  const meters: Array<Insertable<MetersTable> & { registers: Register[] }> = [];
  const readings: Insertable<TransferReadingsTable>[] = [];
  for (const { point, pointIndex, addressId } of points) {
    const supplyPointId = pointIdOf(addressId, pointIndex);
    (point.agreements ?? []).forEach((a, position) => agreements.push({
      supply_point_id: supplyPointId, position, tariff_code: a.tariff_code, effective_from: a.effective_from,
    }));
    if (point.supply_type !== 'ELECTRICITY') continue;
    (point.meters ?? []).forEach((m, position) => meters.push({
      supply_point_id: supplyPointId,
      position,
      serial_number: m.serial_number,
      subgroup: orNull(m.subgroup),
      seal_date: orNull(m.seal_date),
      meter_number: orNull(m.meter_number),
      status: orNull(m.status),
      active_from: orNull(m.active_from),
      meter_type: m.meter_type ? JSON.stringify(m.meter_type) : null,
      registers: m.registers,
    }));
    (point.transfer_readings ?? []).forEach((r, position) => readings.push({
      supply_point_id: supplyPointId, position, register_type: r.register_type, read_date: r.read_date, value: r.value,
    }));
  }
  if (agreements.length > 0) await tree.insertAgreements(trx, agreements);
  if (readings.length > 0) await tree.insertTransferReadings(trx, readings);

  if (meters.length > 0) {
    const meterIds = await tree.insertMeters(trx, meters.map(({ registers: _registers, ...row }) => row));
    const registers = meters.flatMap((m) => m.registers.map((r, position) => ({
      meter_id: meterIds.get(`${m.supply_point_id}:${m.position}`)!,
      position,
      register_type: r.register_type,
      whole_digits: orNull(r.whole_digits),
      decimal_digits: orNull(r.decimal_digits),
      active_from: orNull(r.active_from),
      multiplier: r.multiplier === undefined ? null : String(r.multiplier),
    })));
    if (registers.length > 0) await tree.insertRegisters(trx, registers);
  }

  const notes = data.notes ?? [];
  if (notes.length > 0) {
    await insertNotes(trx, accountId, notes.map((n) => ({
      body: orNull(n.body),
      // The plain list of paths, as the notes import stores them (its dedupe compares them).
      documentPaths: (n.document_paths ?? []).map((d) => d.document_path),
      createdAt: n.created_at ? new Date(n.created_at) : null,
      isPinned: n.is_pinned ?? false,
      unpinAt: n.unpin_at ? new Date(n.unpin_at) : null,
    })));
  }
}
