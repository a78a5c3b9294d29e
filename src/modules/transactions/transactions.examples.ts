import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { CreateTransactionsBody, CreateTransactionsResponse } from './transactions.schemas.ts';

// OpenAPI examples: April's payment and supply charge of the example account, after its March statement.

export const IMPORT_TRANSACTIONS: CreateTransactionsBody = {
  import_supplier: DEMO.supplier,
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  transactions: [
    {
      transaction_id: 'TX-2024-0001', transaction_date: '2024-04-05', amount: 84.17, type: 'PAYMENT',
      reason: 'ACCOUNT_CHARGE_PAYMENT', payment_type: 'DD_REGULAR_COLLECTION', reference: 'DD-APR-2024',
    },
    {
      transaction_id: 'TX-2024-0002', transaction_date: '2024-04-30', amount: 61.5, type: 'SUPPLY_CHARGE', product_code: 'STD-VAR-2023',
      line_items: [{ rate_band: 'Day', start_date: '2024-04-01', end_date: '2024-04-30', number_of_units: 250, net_amount: 58.57, price_per_unit: 0.2343 }],
      tax_items: [{ amount: 2.93, tax_type: 'VAT', value_taxed: 58.57, rate: 0.05, unit_type: 'GBP' }],
    },
  ],
};

export const TRANSACTION_RESULTS: CreateTransactionsResponse = {
  results: [
    {
      status: 'TRANSACTION_ADDED_TO_ACCOUNT',
      transaction_data: {
        transaction_id: 'TX-2024-0001', transaction_date: '2024-04-05', amount: '84.17', type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT',
        reference: 'DD-APR-2024', payment_type: 'DD_REGULAR_COLLECTION', status: 'TRANSACTION_IMPORT_SUCCESS',
      },
    },
    {
      status: 'TRANSACTION_ADDED_TO_ACCOUNT',
      transaction_data: {
        transaction_id: 'TX-2024-0002', transaction_date: '2024-04-30', amount: '61.50', type: 'SUPPLY_CHARGE', product_code: 'STD-VAR-2023',
        line_items: [{ rate_band: 'Day', start_date: '2024-04-01', end_date: '2024-04-30', number_of_units: 250, net_amount: 58.57, price_per_unit: 0.2343 }],
        tax_items: [{ amount: 2.93, tax_type: 'VAT', value_taxed: 58.57, rate: 0.05, unit_type: 'GBP' }],
        status: 'TRANSACTION_IMPORT_SUCCESS',
      },
    },
  ],
};

const BEFORE_PERIOD = 'Transaction "TX-2024-0003" is dated 2024-03-20, before the open statement period, which starts 2024-04-01.';

/** With force_add_to_current_statement=false, a transaction dated inside a closed statement period. */
export const TRANSACTION_REFUSED = {
  detail: BEFORE_PERIOD,
  code: 'TRANSACTION_IMPORT_ERROR',
  errors: [{ detail: BEFORE_PERIOD, code: 'TRANSACTION_IMPORT_ERROR', attr: 'transactions.0.transaction_date' }],
  status: 'TRANSACTION_IMPORT_ERROR',
  error_detail: BEFORE_PERIOD,
  transaction_data: {
    transaction_id: 'TX-2024-0003', transaction_date: '2024-03-20', amount: '12.00', type: 'CHARGE', reason: 'IMPORTED_CHARGE',
  },
};
