import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { PaymentInstructions } from './payment-instructions.service.ts';
import { answer, refusal } from '../../http/openapi.ts';
import {
  EXAMPLE_VENDOR, IMPORT_PAYMENT_INSTRUCTION, NO_SUCH_VENDOR, PAYMENT_INSTRUCTION_STORED, VENDOR_UNAVAILABLE,
} from './payment-instructions.examples.ts';
import { CreatePaymentInstructionBody, CreatePaymentInstructionReply } from './payment-instructions.schemas.ts';

export const paymentInstructionsRoutes: FastifyPluginAsync<{ payments: PaymentInstructions }> = async (app, { payments }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/payment-instruction/create/', {
    schema: {
      tags: ['Imported data'],
      operationId: 'importPaymentInstruction',
      summary: 'Import the payment instruction of an imported account',
      description: [
        'Verifies the instruction with the payment vendor, then stores its non-sensitive details as the',
        "account's one active instruction. Re-posting the same vendor, reference and type answers 201 again and",
        'stores nothing new (another type is 400 conflict at type); a different instruction while one is active is 400 active_payment_instruction_exists.',
        'Vendor outcomes: not found → 400 payment_instruction_not_found; found but ended (a status such as cancelled or expired) →',
        '400 payment_instruction_not_active, nothing stored; refused for good → 400',
        'payment_vendor_rejected (do not retry as is); unreachable, timing out or failing after retries →',
        '500 payment_vendor_unavailable (retry as is).',
        `The example needs a payment vendor \`${EXAMPLE_VENDOR}\` registered by the service team; a fresh service has none.`,
      ].join(' '),
      body: CreatePaymentInstructionBody,
      requestExample: IMPORT_PAYMENT_INSTRUCTION,
      response: {
        201: answer(CreatePaymentInstructionReply, 'The instruction is the account\'s active one (stored now, or the same one stored before).', PAYMENT_INSTRUCTION_STORED),
        400: refusal(['invalid', 'parse_error', 'import_supplier_not_found', 'payment_vendor_not_found', 'payment_instruction_not_found',
          'payment_instruction_not_active', 'payment_vendor_rejected', 'active_payment_instruction_exists', 'conflict'], NO_SUCH_VENDOR),
        404: refusal(['account_not_found'], { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', errors: [
          { detail: 'No imported account "DEMO-0404" for this import supplier.', code: 'account_not_found', attr: 'external_account_number' }] }, { note: 'The account is not imported (or was never staged).' }),
        500: refusal(['payment_vendor_unavailable', 'internal_error'], VENDOR_UNAVAILABLE, {
          note: '`payment_vendor_unavailable`: the vendor could not be reached, timed out or kept failing; retry the request as it is.',
        }),
      },
    },
  }, async (request, reply) => {
    const created = await payments.create(callerOf(request), request.body);
    return reply.code(201).send(created);
  });
};
