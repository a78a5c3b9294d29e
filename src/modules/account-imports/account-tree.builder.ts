import { documentPathsOf, type AccountData, type SupplyPoint } from '../account-data/index.ts';
import type { AccountTreeRows } from './account-tree.repository.ts';

// Maps validated account data onto the rows of a new account, each child keyed by its parents'
// positions in the payload (insertAccountWithTree finds their ids by them).

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

/** The rows of a new account below the account row, for insertAccountWithTree. */
export function accountTreeRows(data: AccountData): AccountTreeRows {
  const rows: AccountTreeRows = {
    customers: data.customers.map((c, position) => ({
      position,
      given_name: c.given_name,
      family_name: c.family_name,
      email: orNull(c.email),
      mobile: orNull(c.mobile),
      landline: orNull(c.landline),
      alternative_phone_numbers: c.alternative_phone_numbers ?? [],
      date_of_birth: orNull(c.date_of_birth),
      opted_into_updates: orNull(c.customer_preferences?.opted_into_updates),
      opted_into_offers: orNull(c.customer_preferences?.opted_into_offers),
      opted_into_sms: orNull(c.customer_preferences?.opted_into_sms),
    })),
    addresses: data.supply_addresses.map((a, position) => ({
      position,
      supply_address1: a.supply_address1,
      supply_address2: orNull(a.supply_address2),
      supply_address3: orNull(a.supply_address3),
      supply_address4: orNull(a.supply_address4),
      supply_postcode: a.supply_postcode,
      customer_at_supply_address_from_date: orNull(a.customer_at_supply_address_from_date),
    })),
    points: [], agreements: [], meters: [], registers: [], readings: [],
    notes: (data.notes ?? []).map((n) => ({
      body: orNull(n.body),
      document_paths: documentPathsOf(n),
      created_at: orNull(n.created_at),
      is_pinned: n.is_pinned ?? false,
      unpin_at: orNull(n.unpin_at),
    })),
  };
  // Each child's parent key is written out field by field: an object spread here (`{ ...key, … }`)
  // cost ten times the literal, and these rows are built for every account a job creates.
  for (const { point: p, addressIndex: address, pointIndex: point } of supplyPointsOf(data)) {
    rows.points.push({
      address,
      point,
      supply_type: p.supply_type,
      supply_start_date: p.supply_start_date,
      last_billed_to_date: orNull(p.last_billed_to_date),
      identifier: p.supply_type === 'ELECTRICITY' ? p.identifier : null,
      details: detailsOf(p),
    });
    (p.agreements ?? []).forEach((a, position) => rows.agreements.push({
      address, point, position, tariff_code: a.tariff_code, effective_from: a.effective_from,
    }));
    if (p.supply_type !== 'ELECTRICITY') continue;
    (p.meters ?? []).forEach((m, meter) => {
      rows.meters.push({
        address,
        point,
        position: meter,
        serial_number: m.serial_number,
        subgroup: orNull(m.subgroup),
        seal_date: orNull(m.seal_date),
        meter_number: orNull(m.meter_number),
        status: orNull(m.status),
        active_from: orNull(m.active_from),
        meter_type: orNull(m.meter_type),
      });
      m.registers.forEach((r, position) => rows.registers.push({
        address,
        point,
        meter,
        position,
        register_type: r.register_type,
        whole_digits: orNull(r.whole_digits),
        decimal_digits: orNull(r.decimal_digits),
        active_from: orNull(r.active_from),
        multiplier: r.multiplier === undefined ? null : String(r.multiplier),
      }));
    });
    (p.transfer_readings ?? []).forEach((r, position) => rows.readings.push({
      address, point, position, register_type: r.register_type, read_date: r.read_date, value: r.value,
    }));
  }
  return rows;
}
