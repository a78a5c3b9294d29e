import type { FastifyInstance } from 'fastify';

// Fastify answers a known path with the wrong method as a plain 404; D4 wants 405. Route patterns are
// collected as they are registered, and the not-found handler asks whether the path exists at all
// and which methods it takes.
export function trackRoutes(app: FastifyInstance): (path: string) => string[] {
  const routes: Array<{ pattern: RegExp; methods: string[] }> = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    const source = route.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+');
    routes.push({ pattern: new RegExp(`^${source}$`), methods });
  });
  // A GET route answers HEAD too (Fastify adds the HEAD route): Allow names it beside GET.
  return (path) => routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods);
}
