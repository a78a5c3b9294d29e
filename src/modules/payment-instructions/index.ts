// The payment instructions module's surface: the service (the route's and a migration record's), its body schema, the routes.
export { paymentInstructionsRoutes } from './payment-instructions.routes.ts';
export { CreatePaymentInstructionBody } from './payment-instructions.schemas.ts';
export { createPaymentInstruction } from './payment-instructions.service.ts';
