import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { AppError } from '../core/errors.ts';
import { authorizationHeaderCount } from './auth.ts';

// Prometheus metrics at /metrics. Registries per app instance, so tests can build several apps.
// The HTTP and process metrics are open; the domain metrics (domain-metrics.ts) carry tenant data
// (supplier codes) and cost queries on the store, so they are served only to a request bearing
// METRICS_TOKEN. Any other credential is refused rather than ignored, so a scraper set up with a
// wrong token fails loudly instead of silently losing series.
/** Returns the registry of the domain metrics, served only with the scrape credential. */
export function registerMetrics(app: FastifyInstance, scrapeToken: string | undefined): Registry {
  const open = new Registry();
  const domain = new Registry();
  collectDefaultMetrics({ register: open });
  const requests = new Counter({
    name: 'http_requests_total', help: 'HTTP requests by route and status', labelNames: ['method', 'route', 'status'], registers: [open],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds', help: 'HTTP request duration by route', labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: [open],
  });
  // A callback hook, not an async one: it runs on every answer.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status: reply.statusCode });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });
  const expected = scrapeToken === undefined ? undefined : digest(scrapeToken);
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const withDomain = scrapeCredentialOf(request, expected);
    void reply.header('content-type', open.contentType);
    return withDomain ? `${await open.metrics()}\n${await domain.metrics()}` : open.metrics();
  });
  return domain;
}

/** True for the scrape credential, false for no credential at all; anything else is refused. */
function scrapeCredentialOf(request: FastifyRequest, expected: Buffer | undefined): boolean {
  if (authorizationHeaderCount(request.raw.rawHeaders) > 1) throw new AppError('invalid', 'Send exactly one Authorization header.');
  const header = request.headers.authorization;
  if (header === undefined) return false;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  // Digests of equal length, compared in constant time: neither the token nor its length leaks.
  if (!match || !expected || !timingSafeEqual(digest(match[1]!), expected)) {
    throw new AppError('authentication_failed', 'The metrics scrape credential is "Authorization: Bearer <METRICS_TOKEN>".');
  }
  return true;
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();
