import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { authGuard, callerOf } from '../../src/http/auth.ts';
import { requireCallerSupplier } from '../../src/core/suppliers.ts';
import { AppError } from '../../src/core/errors.ts';
import type { TokenService } from '../../src/modules/auth/index.ts';

// Test-only routes behind the real guard, to exercise the foundation (guard, supplier ownership,
// strict validation, error handler) without depending on a feature endpoint. Added before the app's
// first inject (routes can be added until the app is ready).
export const PROBE = '/v1/data-import/__probe';

export const ProbeBody = Type.Object({
  import_supplier: Type.String({ maxLength: 64 }),
  count: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
  flag: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });

export function addProbeRoutes(app: FastifyInstance, db: Kysely<Database>, tokens: TokenService): void {
  const onRequest = authGuard(tokens);
  // A read: another organisation's supplier is a 404, exactly like an unknown one.
  app.get(`${PROBE}/suppliers/:code/`, { onRequest, schema: { hide: true } }, async (request) => {
    const { code } = request.params as { code: string };
    const supplier = await callerOf(request).findSupplier(code);
    if (!supplier) throw new AppError('not_found', `No import supplier with code "${code}".`);
    return { code: supplier.code, organisation_id: callerOf(request).organisationId };
  });
  // A write: strict body validation, then the supplier check at its attr.
  app.post(`${PROBE}/suppliers/`, { onRequest, schema: { hide: true, body: ProbeBody } }, async (request) => {
    const body = request.body as { import_supplier: string };
    const supplier = await requireCallerSupplier(callerOf(request), body.import_supplier, 'import_supplier');
    return { code: supplier.code };
  });
  app.post(`${PROBE}/boom/`, { onRequest, schema: { hide: true } }, async () => {
    throw new Error('boom: secret internals at /srv/app/file.ts:12');
  });
}
