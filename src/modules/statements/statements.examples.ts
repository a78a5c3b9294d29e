import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { CreateStatementsBody } from './statements.schemas.ts';

// OpenAPI examples: the example account's March statement, which closes its statement periods.

export const IMPORT_STATEMENTS: CreateStatementsBody = {
  import_supplier: DEMO.supplier,
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  statements: [{
    bill_period_from_date: '2024-03-01', bill_period_to_date: '2024-03-31', statement_id: 'ST-2024-03', issued_date: '2024-04-02',
    number: 'INV-000311', gross_amount: 84.17, statement_path: 'statements/2024/ST-2024-03.pdf',
  }],
};

export const STATEMENT_OVERLAP = {
  detail: 'The period 2024-03-15 to 2024-04-14 overlaps statement "ST-2024-03" (2024-03-01 to 2024-03-31).',
  code: 'statement_period_overlap',
  errors: [{
    detail: 'The period 2024-03-15 to 2024-04-14 overlaps statement "ST-2024-03" (2024-03-01 to 2024-03-31).',
    code: 'statement_period_overlap', attr: 'statements.0.bill_period_from_date',
  }],
};
