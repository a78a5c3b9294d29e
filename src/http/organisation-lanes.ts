import type { FastifyInstance, FastifyRequest } from 'fastify';
import { callerOf } from './auth.ts';

// On the embedded store (PGlite) the whole process has one database session, and one long statement
// holds every request of every organisation until it ends. An operation marked `oneAtATime` (a job's
// reconciliation and its exceptions, its rate, a search through its records, cancelling or retrying
// it: each can be one statement over all of a big job's records) runs one at a time per organisation:
// a second waits in its organisation's own line, before it takes any turn of the session, so an
// organisation sending twelve at once holds the others up for one of them, not for twelve. Only on
// PGlite, which is one process by construction; on PostgreSQL each request has a session of its own,
// and a line kept in one process would not hold across instances anyway.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** On PGlite, the operation runs one at a time per organisation (organisation-lanes.ts). */
    oneAtATime?: boolean;
  }
}

/** The lines of the app's guarded routes: to register on the /v1 scope, after its auth guard. */
export function registerOrganisationLanes(scope: FastifyInstance): void {
  const tails = new Map<number, Promise<void>>();
  const turns = new WeakMap<FastifyRequest, { answered(): void; closed(): void; done(): void }>();
  scope.addHook('preHandler', async (request, reply) => {
    if (request.routeOptions.config.oneAtATime !== true) return;
    const organisation = callerOf(request).organisationId;
    const before = tails.get(organisation) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => { release = resolve; });
    const tail = before.then(() => mine);
    tails.set(organisation, tail);
    // The turn ends when the operation's work has: its answer handed over (the handler has
    // returned, or failed) and the connection closed (a streamed answer read to its end, or cut
    // short, which stops the stream); or once the answer is sent. A client that goes away early
    // does not end the turn while the handler still works, so quitting and asking again cannot
    // pile up an organisation's operations.
    let answered = false;
    let closed = false;
    let left = false;
    const done = () => {
      if (left) return;
      left = true;
      release();
      if (tails.get(organisation) === tail) tails.delete(organisation);
    };
    turns.set(request, {
      answered() { answered = true; if (closed) done(); },
      closed() { closed = true; if (answered) done(); },
      done,
    });
    reply.raw.once('close', () => turns.get(request)?.closed());
    await before;
  });
  scope.addHook('onSend', async (request) => {
    turns.get(request)?.answered();
  });
  scope.addHook('onResponse', async (request) => {
    turns.get(request)?.done();
  });
}
