import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './proc.ts';

// The account bodies the bench sends: the shared test fixture (test/support/payloads.ts,
// accountPayload) when it exists, so the bench sends exactly what the tests prove valid; a local
// one of the same shape before that. Either way every supply-point kind is in it.
type Payload = Record<string, any>;
export type PayloadFactory = (supplierCode: string) => Payload;

export const MARK = '\u0000N\u0000';

export async function loadPayloadFactory(): Promise<{ factory: PayloadFactory; source: string }> {
  const file = join(ROOT, 'test/support/payloads.ts');
  if (existsSync(file)) {
    const mod = await import(file) as { accountPayload?: PayloadFactory };
    if (mod.accountPayload) return { factory: mod.accountPayload, source: 'test/support/payloads.ts accountPayload' };
  }
  return { factory: localPayload, source: 'bench/lib/account-payload.ts (local)' };
}

/**
 * JSON templates split at the per-request number: the external account number and every
 * electricity identifier (unique across live accounts) carry it, so each request is a new account.
 */
export function accountTemplates(factory: PayloadFactory, supplier: string, prefix: string, count: number): string[][] {
  return Array.from({ length: count }, (_, t) => {
    const payload = factory(supplier);
    payload.external_account_number = `${prefix}-${MARK}`;
    let k = 0;
    for (const address of payload.supply_addresses ?? []) {
      for (const point of address.supply_points ?? []) {
        if (point.supply_type === 'ELECTRICITY') point.identifier = `${prefix}${t}E${k++}-${MARK}`;
      }
    }
    return JSON.stringify(payload).split(JSON.stringify(MARK).slice(1, -1));
  });
}

function localPayload(supplier: string): Payload {
  const register = (type: string) => ({ register_type: type, whole_digits: 6, decimal_digits: 1, active_from: '2019-04-01', multiplier: 1 });
  const meter = (serial: string) => ({
    serial_number: serial, subgroup: 1, seal_date: '2019-03-15', meter_number: 1, status: 'ACTIVE', active_from: '2019-04-01',
    meter_type: {
      manufacturer: 'Landis+Gyr', model: 'E470', stock_code: 'LG-E470-1P', amps_low: 5, amps_high: 100, volts_low: 220, volts_high: 240,
      elements: 1, phase: 'SINGLE', is_bidirectional: false, is_analog: false, network_connectivity: true, cover_material: 'GLASS',
      wire_ports: 4, base: 'SOCKET',
    },
    registers: [register('KWH_IMPORT'), register('KW_IMPORT')],
  });
  const common = { supply_start_date: '2019-04-01', last_billed_to_date: '2024-03-31', agreements: [{ tariff_code: 'E-1R-STANDARD-24', effective_from: '2024-01-01' }] };
  const electricity = (id: string) => ({
    ...common, supply_type: 'ELECTRICITY', identifier: id, initial_connection_date: '2001-06-12', location_description: 'Under the stairs',
    book_number: 'BK-1042', call_number: 17, energization_status: 'ENERGIZED', meters: [meter(`${id}-M1`), meter(`${id}-M2`)],
    transfer_readings: [{ register_type: 'KWH_IMPORT', read_date: '2024-03-31', value: '10432.5' }, { register_type: 'KW_IMPORT', read_date: '2024-03-31', value: '7.2' }],
  });
  const customer = (given: string, family: string) => ({
    given_name: given, family_name: family, email: `${given.toLowerCase()}.${family.toLowerCase()}@example.com`, mobile: '+447700900123',
    landline: '020 7946 0018', alternative_phone_numbers: [{ phone_number: '+447700900456' }], date_of_birth: '1980-05-17',
    customer_preferences: { opted_into_updates: true, opted_into_offers: false, opted_into_sms: true }, user_details: [],
  });
  const id = Math.random().toString(36).slice(2, 10).toUpperCase();
  return {
    external_account_number: `EXT-${id}`,
    import_supplier: supplier,
    billing_address: { street_address: '12 Acacia Avenue\nFlat 3', locality: 'London', administrative_area: 'Greater London', country: 'GB', postal_code: 'SW1A 1AA' },
    metadata: [{ key: 'legacy_system', value: { name: 'OldCo CIS', version: 7 } }, { key: 'segment', value: { code: 'RES', tier: 2 } }],
    customers: [customer('Ada', 'Lovelace'), customer('Charles', 'Babbage')],
    supply_addresses: [
      {
        supply_address1: '12 Acacia Avenue', supply_address2: 'Flat 3', supply_address3: 'Westminster', supply_address4: 'London',
        supply_postcode: 'SW1A 1AA', customer_at_supply_address_from_date: '2019-04-01',
        supply_points: [
          electricity(`1200${id}`),
          { ...common, supply_type: 'HEAT_PUMP', serial_number_internal: `HPI-${id}`, serial_number_external: `HPE-${id}`, make_model: 'Daikin Altherma 3', size: 8, location_description: 'Rear garden', product_note: 'Serviced yearly' },
          { ...common, supply_type: 'WATER_HEATER', serial_number: `WH-${id}`, tank_size: 'BIG', tank_type: 'GREEN', tank_configuration: 'VERTICAL' },
        ],
      },
      {
        supply_address1: 'Unit 4 Riverside Estate', supply_postcode: 'E14 5AB', customer_at_supply_address_from_date: '2020-01-15',
        supply_points: [
          electricity(`1300${id}`),
          { ...common, supply_type: 'LIGHT', serial_number: `LT-${id}`, secondary_serial_number: null, manufacturer_name: 'Philips', model_name: 'CitySoul', location: 'Car park north', product_note: 'LED retrofit', installed_at: '2018-09-01' },
          { ...common, supply_type: 'POLE', serial_number: `PL-${id}`, secondary_serial_number: `PL2-${id}`, manufacturer_name: 'Valmont', model_name: 'Steel 8m', location: 'Entrance', product_note: 'Painted 2022', installed_at: '2015-02-20' },
        ],
      },
    ],
    ledgers: [],
    statements: [],
    notes: [{ body: 'Customer prefers contact by email.', created_at: '2024-01-05T10:00:00Z', is_pinned: true, unpin_at: '2024-12-31T00:00:00Z' }],
    unknown_occupier: false,
  };
}
