import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Config } from './config.ts';
import { graphqlRoutes } from './graphql/graphql.routes.ts';
import { authenticate, authGuard, isGuardedPath } from './http/auth.ts';
import { registerBodyReading } from './http/body-encoding.ts';
import { answerUnmetExpectation, handleClientError, refuseTunnel, handleFrameworkError, registerErrorHandling, ROUTER_MAX_PARAM_LENGTH } from './http/error-handler.ts';
import { RequestLog } from './http/request-log.ts';
import { registerShutdownAnswers, sendDraining, type Readiness } from './http/shutdown.ts';
import { AppError } from './core/errors.ts';
import { trackRoutes } from './http/method-not-allowed.ts';
import { registerMetrics } from './http/metrics.ts';
import { registerDashboard } from './http/dashboard.ts';
import { registerDomainMetrics } from './http/domain-metrics.ts';
import { registerOpenApi } from './http/openapi.ts';
import { compileRequestValidator } from './http/validator-compiler.ts';
import { accountDataRoutes } from './modules/account-data/index.ts';
import { accountImportsRoutes } from './modules/account-imports/index.ts';
import { accountsRoutes } from './modules/accounts/index.ts';
import { eventsRoutes } from './modules/events/index.ts';
import { jobViewsRoutes, migrationJobsRoutes } from './modules/migration-jobs/index.ts';
import { reconciliationRoutes } from './modules/migration-jobs/index.ts';
import { notesRoutes } from './modules/notes/index.ts';
import { paymentInstructionsRoutes } from './modules/payment-instructions/index.ts';
import { statementsRoutes } from './modules/statements/index.ts';
import { statsRoutes } from './modules/stats/index.ts';
import { transactionsRoutes } from './modules/transactions/index.ts';
import { webhookEndpointsRoutes } from './modules/webhooks/index.ts';
import type { Modules } from './composition.ts';
import { registerOrganisationLanes } from './http/organisation-lanes.ts';

export interface AppOptions {
  /** The process's modules, built once by the composition root (composition.ts) and shared with its workers. */
  modules: Modules;
  /** The app's settings, when they differ from the modules' (a test's app with a smaller body limit, say). */
  config?: Config;
  logger?: FastifyBaseLogger;
  /** Set `draining` on SIGTERM: /readyz then answers 503 (main.ts). */
  readiness?: Readiness;
}

/** The query string of an operation that takes no parameter: none at all. */
const NO_QUERY = Type.Object({}, { additionalProperties: false });

/** Builds the whole HTTP app over the process's modules. Never listens: main.ts and the tests do that. */
export async function buildApp({ modules, config = modules.config, logger, readiness = { draining: false } }: AppOptions): Promise<FastifyInstance> {
  const { db, tokens } = modules;
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: config.bodyLimitBytes,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    // Slow clients: a request must send its headers and body in bounded time. The limits must also
    // reach node's http server at construction (`http`): set afterwards, as Fastify does with
    // requestTimeout, node 20 still cuts slow headers but lets a slow body run on (test/faults).
    requestTimeout: config.requestTimeoutMs,
    connectionTimeout: config.connectionTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(config.headersTimeoutMs, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(Math.min(config.headersTimeoutMs, config.requestTimeoutMs) / 4))),
    },
    clientErrorHandler: handleClientError,
    // Routing errors (bad percent-escapes) and requests arriving while the server closes are
    // answered in the one error body (error-handler.ts, http/shutdown.ts).
    frameworkErrors: handleFrameworkError,
    return503OnClosing: false,
    // One line per request, with the route, the error code and the subject (http/request-log.ts).
    logController: new RequestLog(),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: ROUTER_MAX_PARAM_LENGTH },
  });
  // Bodies are JSON only (D4): without this, Fastify's built-in text/plain parser would accept a
  // text body and fail it as a validation error instead of answering 415.
  app.removeContentTypeParser('text/plain');
  // An Expect other than 100-continue: Node would answer an empty 417 (error-handler.ts).
  app.server.on('checkExpectation', answerUnmetExpectation);
  app.server.on('connect', refuseTunnel);
  registerBodyReading(app, config.bodyLimitBytes);
  registerShutdownAnswers(app, readiness);

  // A callback hook (no promise per answer); `done()` keeps the payload as it is.
  app.addHook('onSend', (request, reply, _payload, done) => {
    void reply.header('x-request-id', request.id);
    done();
  });

  app.setValidatorCompiler(compileRequestValidator);

  registerErrorHandling(app);
  const allowedMethods = trackRoutes(app);
  const routeMiss = async (request: FastifyRequest): Promise<AppError> => {
    const path = request.url.split('?')[0] ?? '';
    // The guard covers the whole /v1 prefix, unknown paths included (a 401 before any 404 or 405).
    if (isGuardedPath(path)) await authenticate(tokens, request);
    const methods = allowedMethods(path.endsWith('/') ? path : `${path}/`).concat(allowedMethods(path));
    return methods.length > 0
      ? new AppError('method_not_allowed', `Method "${request.method}" not allowed.`, { headers: { Allow: [...new Set(methods)].join(', ') } })
      : new AppError('not_found', `No route for ${request.method} ${path}.`);
  };
  // Answered before the body is read: a wrong method sent with a malformed or oversized body is a
  // 405 (or 404), not the body's 400 or 413. The body is not read, so the connection is closed after.
  app.addHook('onRequest', async (request, reply) => {
    if (!request.is404) return;
    if (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined) void reply.header('connection', 'close');
    throw await routeMiss(request);
  });
  // Fastify's own 404 answer, should a miss ever get past the hook above, is replaced all the same.
  app.setNotFoundHandler(async (request) => {
    throw await routeMiss(request);
  });

  await registerOpenApi(app);

  registerDomainMetrics(registerMetrics(app, config.metricsToken), db);
  registerDashboard(app);
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    if (readiness.draining) return sendDraining(request, reply);
    try {
      await sql`select 1`.execute(db);
    } catch {
      throw new AppError('service_unavailable', 'The store is not reachable.');
    }
    return { status: 'ready' };
  });

  // Every plugin is given all the modules; each names in its own options type the parts it uses.
  const deps: Modules = { ...modules, config };
  await app.register(graphqlRoutes, deps);
  await app.register(async (v1) => {
    v1.addHook('onRequest', authGuard(tokens));
    if (modules.store.kind === 'pglite') registerOrganisationLanes(v1);
    // A query parameter an operation does not document is refused (`unknown_field`) on every
    // operation, also those that take none: a client sending `page_size` to an answer that is not
    // paged learns it, instead of silently getting something else than it asked for.
    v1.addHook('onRoute', (route) => {
      if (route.schema && !route.schema.querystring) route.schema = { ...route.schema, querystring: NO_QUERY };
    });
    const plugins: FastifyPluginAsync<Modules>[] = [accountDataRoutes, accountImportsRoutes, notesRoutes, transactionsRoutes,
      statementsRoutes, paymentInstructionsRoutes, accountsRoutes, eventsRoutes, migrationJobsRoutes, reconciliationRoutes,
      jobViewsRoutes, statsRoutes, webhookEndpointsRoutes];
    for (const routes of plugins) {
      await v1.register(routes, deps);
    }
  }, { prefix: '/v1/data-import' });

  return app;
}
