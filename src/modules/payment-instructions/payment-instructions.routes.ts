import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync } from 'fastify';
import { callerOf } from '../../http/auth.ts';
import type { RouteDeps } from '../../http/route-deps.ts';
import { ErrorBody } from '../../schemas/error-body.ts';
import { CreatePaymentInstructionBody, CreatePaymentInstructionReply } from './payment-instructions.schemas.ts';
import { createPaymentInstruction } from './payment-instructions.service.ts';

export const paymentInstructionsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { db }) => {
  app.withTypeProvider<TypeBoxTypeProvider>().post('/payment-instruction/create/', {
    schema: {
      tags: ['payment instructions'],
      summary: 'Import the payment instruction of an imported account',
      description: [
        'Verifies the instruction with the payment vendor, then stores its non-sensitive details as the',
        "account's one active instruction. Re-posting the same vendor and reference answers 201 again and",
        'stores nothing new; a different instruction while one is active is 400 active_payment_instruction_exists.',
        'Vendor outcomes: not found → 400 payment_instruction_not_found; refused for good → 400',
        'payment_vendor_rejected (do not retry as is); unreachable, timing out or failing after retries →',
        '500 payment_vendor_unavailable (retry as is).',
      ].join(' '),
      body: CreatePaymentInstructionBody,
      response: { 201: CreatePaymentInstructionReply, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 500: ErrorBody },
    },
  }, async (request, reply) => {
    const created = await createPaymentInstruction(db, callerOf(request), request.body);
    return reply.code(201).send(created);
  });
};
