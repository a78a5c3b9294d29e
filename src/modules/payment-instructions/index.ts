// The payment instructions module's surface: the service (the route's and a migration record's), its body
// schema, the routes; for the tests, the OpenAPI example, and the vendor clients with their retry policy.
export { EXAMPLE_VENDOR, IMPORT_PAYMENT_INSTRUCTION } from './payment-instructions.examples.ts';
export { paymentInstructionsRoutes } from './payment-instructions.routes.ts';
export { CreatePaymentInstructionBody } from './payment-instructions.schemas.ts';
export { askTheVendor, createPaymentInstructions, type AskVendor, type PaymentInstructions } from './payment-instructions.service.ts';
export { isEndedStatus, type PaymentVendor, type VendorInstruction } from './vendors/vendor.ts';
export { DEFAULT_VENDOR_TIMEOUT_MS, retryPolicyFor, VENDOR_CALL_LIMIT_MS } from './vendors/retry.ts';
export { createVendorClient } from './vendors/vendor-factory.ts';
