import { DEMO } from '../admin/index.ts';
import type { AccountData } from './account-data.schemas.ts';

// The account of the OpenAPI examples: valid, for the demo supplier that a fresh service seeds, so
// "Try it out" in /docs validates, stages and creates it (test/http/openapi-examples.test.ts does).

export const EXAMPLE_ACCOUNT_NUMBER = 'DEMO-0001';
/** The service account number the examples show the example account imported as. */
export const EXAMPLE_SERVICE_ACCOUNT_NUMBER = 'A-7K2M9Q4X';

export const EXAMPLE_ACCOUNT: AccountData = {
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  import_supplier: DEMO.supplier,
  billing_address: {
    street_address: 'Flat 2\n14 Harbour Road', locality: 'Bristol', administrative_area: 'City of Bristol',
    country: 'GB', postal_code: 'BS1 5TY',
  },
  metadata: [{ key: 'legacy_system', value: { name: 'billing-v2', migrated_by: 'batch-7' } }],
  customers: [{
    given_name: 'Alice', family_name: 'Jones', email: 'alice.jones@example.com', mobile: '+447911123456',
    landline: '020 7946 0018', date_of_birth: '1980-04-12',
    customer_preferences: { opted_into_updates: true, opted_into_offers: false, opted_into_sms: true },
  }],
  supply_addresses: [{
    supply_address1: 'Flat 2', supply_address2: '14 Harbour Road', supply_address3: 'Bristol', supply_postcode: 'BS1 5TY',
    customer_at_supply_address_from_date: '2019-06-01',
    supply_points: [
      {
        supply_type: 'ELECTRICITY', supply_start_date: '2019-06-01', last_billed_to_date: '2024-03-31',
        identifier: 'MPAN-DEMO-0001', energization_status: 'ENERGIZED',
        agreements: [{ tariff_code: 'STD-VAR-2023', effective_from: '2023-04-01' }],
        meters: [{
          serial_number: 'SN-DEMO-0001', status: 'ACTIVE', active_from: '2019-06-01',
          meter_type: { manufacturer: 'Landis+Gyr', model: 'E470', phase: 'SINGLE' },
          registers: [{ register_type: 'KWH_IMPORT', whole_digits: 6, decimal_digits: 1, multiplier: 1 }],
        }],
        transfer_readings: [{ register_type: 'KWH_IMPORT', read_date: '2024-03-31', value: '18234.7' }],
      },
      { supply_type: 'WATER_HEATER', supply_start_date: '2019-06-01', serial_number: 'WH-DEMO-0001', tank_size: 'BIG' },
    ],
  }],
  notes: [{ body: 'Customer prefers contact by email.', created_at: '2024-01-10T09:30:00Z' }],
};

/** What a mobile number without + and a missing postcode answer. */
export const ACCOUNT_DATA_REFUSED = {
  detail: 'The account data failed validation.',
  code: 'account_failed_validation',
  errors: [
    { detail: 'This field is required.', code: 'required', attr: 'billing_address.postal_code' },
    { detail: 'Enter a valid phone number in international format with a leading +.', code: 'invalid_phone_number', attr: 'customers.0.mobile' },
  ],
};

const NO_SUPPLIER = 'No import supplier with code "ACME".';
export const IMPORT_SUPPLIER_NOT_FOUND = {
  detail: NO_SUPPLIER, code: 'import_supplier_not_found', errors: [{ detail: NO_SUPPLIER, code: 'import_supplier_not_found', attr: 'import_supplier' }],
};
