import { EXAMPLE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { EXAMPLE_SERVICE_ACCOUNT_NUMBER } from '../account-data/index.ts';
import { DEMO } from '../admin/index.ts';
import type { CreatePaymentInstructionBody, CreatePaymentInstructionReply } from './payment-instructions.schemas.ts';

// OpenAPI examples. A fresh service has no payment vendor: this one needs the service team to have
// registered the vendor `demo-pay` (import-admin vendor create); without it the answer is
// 400 payment_vendor_not_found.

export const EXAMPLE_VENDOR = 'demo-pay';

export const IMPORT_PAYMENT_INSTRUCTION: CreatePaymentInstructionBody = {
  import_supplier: DEMO.supplier, external_account_number: EXAMPLE_ACCOUNT_NUMBER, vendor: EXAMPLE_VENDOR,
  reference: 'pm_1PqR2sT3uV4wX5yZ', type: 'CARD',
};

export const PAYMENT_INSTRUCTION_STORED: CreatePaymentInstructionReply = {
  service_account_number: EXAMPLE_SERVICE_ACCOUNT_NUMBER, reference: 'pm_1PqR2sT3uV4wX5yZ',
};

export const NO_SUCH_VENDOR = {
  detail: `No payment vendor with code "${EXAMPLE_VENDOR}".`, code: 'payment_vendor_not_found',
  errors: [{ detail: `No payment vendor with code "${EXAMPLE_VENDOR}".`, code: 'payment_vendor_not_found', attr: 'vendor' }],
};

export const VENDOR_UNAVAILABLE = {
  detail: `Payment vendor "${EXAMPLE_VENDOR}" answered HTTP 503. (3 attempts) Retry the request as it is.`, code: 'payment_vendor_unavailable',
};
