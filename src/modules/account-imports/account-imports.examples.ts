import { DEMO } from '../admin/index.ts';
import { EXAMPLE_ACCOUNT_NUMBER, EXAMPLE_SERVICE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import type { AccountStatusResponse, ImportRecord, ProcessAccountBody, StageAccountResponse } from './account-imports.schemas.ts';

// OpenAPI examples of staging, creating and following the example account of the demo supplier.

export const STAGED: StageAccountResponse = { import_supplier: DEMO.supplier, external_account_number: EXAMPLE_ACCOUNT_NUMBER };

export const CREATE_ACCOUNT: ProcessAccountBody = {
  external_account_number: EXAMPLE_ACCOUNT_NUMBER, import_supplier_code: DEMO.supplier, operations_team_name: DEMO.team,
};

export const ALREADY_IMPORTED = {
  detail: `Account "${EXAMPLE_ACCOUNT_NUMBER}" is already imported as ${EXAMPLE_SERVICE_ACCOUNT_NUMBER}.`,
  code: 'account_already_imported',
  errors: [{
    detail: `Account "${EXAMPLE_ACCOUNT_NUMBER}" is already imported as ${EXAMPLE_SERVICE_ACCOUNT_NUMBER}.`,
    code: 'account_already_imported', attr: 'external_account_number',
  }],
  external_account_number: EXAMPLE_ACCOUNT_NUMBER,
  service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER,
};

export const CONCURRENCY_LIMIT = {
  detail: 'More than 40 accounts are being created at once; retry shortly.', code: 'concurrency_limit_exceeded',
};

export const ACCOUNT_STATUS: AccountStatusResponse = {
  status: 'COMPLETED', service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER, last_error: null,
};

export const NO_IMPORT_PROCESS = {
  detail: `No import process for account "DEMO-0404" of import supplier "${DEMO.supplier}".`, code: 'account_not_found',
};

export const IMPORT_RECORDS: ImportRecord[] = [
  { external_account_number: EXAMPLE_ACCOUNT_NUMBER, service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER, account_created_at: '2025-03-04T10:15:00Z' },
  { external_account_number: 'DEMO-0002', service_account_number: null, account_created_at: null },
];

export const UNKNOWN_SUPPLIER = { detail: 'No import supplier with code "ACME".', code: 'not_found' };

export { BAD_CURSOR } from '../../core/cursor.ts';
