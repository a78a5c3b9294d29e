import type { FastifyPluginAsync } from 'fastify';
import type { RouteDeps } from '../http/route-deps.ts';

// Not built yet.
export const graphqlRoutes: FastifyPluginAsync<RouteDeps> = async () => {};
