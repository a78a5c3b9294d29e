import { randomUUID } from 'node:crypto';
import type { AccountData } from '../../src/modules/account-data/index.ts';

// A realistic, valid account import payload (spec 2.3) of about 5 KB: every supply-point kind, two
// customers, metadata and notes. Each call has its own external account number and electricity
// identifiers, so tests and benchmarks can stage and create as many as they like.

const token = (): string => randomUUID().replace(/-/g, '').slice(0, 12).toUpperCase();

/** `overrides` replace top-level fields (deep changes: edit the returned object, it is yours). */
export function accountPayload(supplierCode: string, overrides: Partial<AccountData> = {}): AccountData {
  const id = token();
  return {
    external_account_number: `EXT-${id}`,
    import_supplier: supplierCode,
    billing_address: {
      street_address: 'Flat 2\n14 Harbour Road',
      locality: 'Bristol',
      administrative_area: 'City of Bristol',
      country: 'GB',
      postal_code: 'BS1 5TY',
    },
    metadata: [
      { key: 'legacy_system', value: { name: 'billing-v2', migrated_by: 'batch-7' } },
      { key: 'payment_terms', value: { days: 14, paper_bills: false } },
    ],
    customers: [
      {
        given_name: 'Alice',
        family_name: 'Jones',
        email: `alice.${id.toLowerCase()}@example.com`,
        mobile: '+447911123456',
        landline: '020 7946 0018',
        alternative_phone_numbers: [{ phone_number: '+441174960123' }],
        date_of_birth: '1980-04-12',
        customer_preferences: { opted_into_updates: true, opted_into_offers: false, opted_into_sms: true },
        user_details: [],
      },
      {
        given_name: 'Bob',
        family_name: 'Jones',
        email: '',
        landline: '',
        customer_preferences: { opted_into_updates: false, opted_into_offers: false, opted_into_sms: false },
      },
    ],
    supply_addresses: [
      {
        supply_address1: 'Flat 2',
        supply_address2: '14 Harbour Road',
        supply_address3: 'Bristol',
        supply_postcode: 'BS1 5TY',
        customer_at_supply_address_from_date: '2019-06-01',
        supply_points: [
          {
            supply_type: 'ELECTRICITY',
            supply_start_date: '2019-06-01',
            last_billed_to_date: '2024-03-31',
            identifier: `MPAN-${id}-1`,
            initial_connection_date: '2001-02-15',
            location_description: 'Cupboard under the stairs',
            book_number: 'BK-118',
            call_number: 42,
            energization_status: 'ENERGIZED',
            agreements: [
              { tariff_code: 'STD-VAR-2023', effective_from: '2023-04-01' },
              { tariff_code: 'FIX-12M-2024', effective_from: '2024-04-01' },
            ],
            meters: [
              {
                serial_number: `SN-${id}-A`,
                subgroup: 1,
                seal_date: '2019-05-20',
                meter_number: 1,
                status: 'ACTIVE',
                active_from: '2019-06-01',
                meter_type: {
                  manufacturer: 'Landis+Gyr',
                  model: 'E470',
                  stock_code: 'LG-E470-1P',
                  amps_low: 5,
                  amps_high: 100,
                  volts_low: 220,
                  volts_high: 240,
                  elements: 1,
                  phase: 'SINGLE',
                  is_bidirectional: true,
                  is_analog: false,
                  network_connectivity: true,
                  cover_material: 'GLASS',
                  wire_ports: 4,
                  base: 'SOCKET',
                },
                registers: [
                  { register_type: 'KWH_IMPORT', whole_digits: 6, decimal_digits: 1, active_from: '2019-06-01', multiplier: 1 },
                  { register_type: 'KW_IMPORT', whole_digits: 4, decimal_digits: 2, active_from: '2019-06-01', multiplier: 1.5 },
                ],
              },
            ],
            transfer_readings: [
              { register_type: 'KWH_IMPORT', read_date: '2024-03-31', value: '18234.7' },
              { register_type: 'KW_IMPORT', read_date: '2024-03-31', value: '6.25' },
            ],
          },
          {
            supply_type: 'WATER_HEATER',
            supply_start_date: '2019-06-01',
            serial_number: `WH-${id}`,
            tank_size: 'BIG',
            tank_type: 'GREEN',
            tank_configuration: 'Vertical, loft',
            agreements: [{ tariff_code: 'WH-RENT', effective_from: '2019-06-01' }],
          },
        ],
      },
      {
        supply_address1: 'Unit 7',
        supply_address2: 'Quayside Business Park',
        supply_postcode: 'BS2 0QP',
        supply_points: [
          {
            supply_type: 'ELECTRICITY',
            supply_start_date: '2021-01-15',
            identifier: `MPAN-${id}-2`,
            energization_status: 'DE_ENERGIZED',
            meters: [{ serial_number: `SN-${id}-B`, status: 'INACTIVE', registers: [{ register_type: 'KWH_EXPORT' }] }],
          },
          {
            supply_type: 'HEAT_PUMP',
            supply_start_date: '2022-09-01',
            last_billed_to_date: '2024-03-31',
            serial_number_internal: `HP-${id}-IN`,
            serial_number_external: `HP-${id}-OUT`,
            make_model: 'Daikin Altherma 3',
            size: 8,
            location_description: 'Rear yard',
            product_note: 'Serviced yearly in September.',
          },
          {
            supply_type: 'LIGHT',
            supply_start_date: '2020-03-01',
            serial_number: `LT-${id}`,
            secondary_serial_number: null,
            manufacturer_name: 'Philips',
            model_name: 'CitySoul',
            location: 'Car park, north corner',
            installed_at: '2020-02-20',
          },
          {
            supply_type: 'POLE',
            supply_start_date: '2020-03-01',
            serial_number: `PL-${id}`,
            secondary_serial_number: `PL-${id}-2`,
            manufacturer_name: 'Valmont',
            model_name: 'Steel 8m',
            location: 'Car park entrance',
            product_note: 'Shared with the street light.',
            installed_at: '2020-02-20',
          },
        ],
      },
    ],
    ledgers: [],
    statements: [],
    notes: [
      { body: 'Customer prefers contact by email.', created_at: '2024-01-10T09:30:00Z' },
      { body: 'Payment plan agreed until June.', created_at: '2024-02-01T14:00:00Z', is_pinned: true, unpin_at: '2024-07-01T00:00:00Z' },
      { document_paths: [{ document_path: `letters/${id}/welcome-2019.pdf` }] },
    ],
    unknown_occupier: false,
    ...overrides,
  };
}
