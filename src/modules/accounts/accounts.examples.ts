import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { EXAMPLE_SERVICE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { AccountView } from './account-read.schemas.ts';

// OpenAPI example: the example account once its history is imported (as the other examples import it).

export const ACCOUNT_VIEW: AccountView = {
  service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER,
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  import_supplier: DEMO.supplier,
  operations_team: DEMO.team,
  created_at: '2025-03-04T10:15:00Z',
  billing_address: {
    street_address: 'Flat 2\n14 Harbour Road', locality: 'Bristol', administrative_area: 'City of Bristol', country: 'GB', postal_code: 'BS1 5TY',
  },
  unknown_occupier: null,
  customers: [{ given_name: 'Alice', family_name: 'Jones', email: 'alice.jones@example.com', mobile: '+447911123456', landline: '020 7946 0018' }],
  supply_addresses: [{
    supply_address1: 'Flat 2', supply_address2: '14 Harbour Road', supply_address3: 'Bristol', supply_address4: null, supply_postcode: 'BS1 5TY',
    customer_at_supply_address_from_date: '2019-06-01',
    supply_points: [
      {
        supply_type: 'ELECTRICITY', identifier: 'MPAN-DEMO-0001', supply_start_date: '2019-06-01', last_billed_to_date: '2024-03-31',
        agreements_count: 1, meters_count: 1, registers_count: 1,
      },
      {
        supply_type: 'WATER_HEATER', identifier: null, supply_start_date: '2019-06-01', last_billed_to_date: null,
        agreements_count: 0, meters_count: 0, registers_count: 0,
      },
    ],
  }],
  balance: '22.67',
  transactions_count: 2,
  open_statement_period_from: '2024-04-01',
  notes_count: 3,
  pinned_notes: [],
  statements: [{
    statement_id: 'ST-2024-03', bill_period_from_date: '2024-03-01', bill_period_to_date: '2024-03-31', issued_date: '2024-04-02',
    number: 'INV-000311', gross_amount: '84.17',
    document: { document_path: 'statements/2024/ST-2024-03.pdf', location: 's3://account-migration-documents/statements/2024/ST-2024-03.pdf' },
  }],
  payment_instruction: {
    vendor: 'demo-pay', reference: 'pm_1PqR2sT3uV4wX5yZ', type: 'CARD', status: 'active',
    details: { type: 'CARD', brand: 'visa', last4: '4242', expiry: '12/30', status: 'active', reference: 'pm_1PqR2sT3uV4wX5yZ' },
    created_at: '2025-03-04T10:16:00Z',
  },
};
