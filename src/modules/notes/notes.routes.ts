import type { FastifyPluginAsync } from 'fastify';
import type { RouteDeps } from '../../http/route-deps.ts';

// Not built yet: see the issue that owns this module.
export const notesRoutes: FastifyPluginAsync<RouteDeps> = async () => {};
