import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.ts';
import { noteErrorCode } from './request-log.ts';

// Shutdown in two steps (main.ts, docs/operations.md#shutdown). Draining: the instance still serves
// every request, but /readyz answers 503 so that a load balancer stops sending it new ones.
// Closing (app.close()): no new connection is accepted, requests in flight finish, and a request
// that still arrives on an open keep-alive connection is answered 503 in the usual error body
// (Fastify's own answer, return503OnClosing, has another shape) with `Connection: close`.

export interface Readiness {
  /** Set by main.ts on SIGTERM. */
  draining: boolean;
}

export function registerShutdownAnswers(app: FastifyInstance, readiness: Readiness): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    readiness.draining = true;
  });
  // A callback hook, not an async one: it runs on every request and almost always has nothing to do.
  app.addHook('onRequest', (_request, _reply, done) => {
    if (!closing) {
      done();
      return;
    }
    done(new AppError('service_unavailable', 'This instance is shutting down; retry the request.', {
      headers: { Connection: 'close', 'Retry-After': '1' },
    }));
  });
}

/** What /readyz answers while the instance drains: the answer a load balancer needs, not a failure to log. */
export function sendDraining(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const answer = new AppError('service_unavailable', 'This instance is shutting down and takes no new requests.');
  noteErrorCode(request, answer.code);
  return reply.code(answer.status).send(answer.body());
}
