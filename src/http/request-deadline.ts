import type { FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

// REQUEST_TIMEOUT_MS is node's own whole-request deadline (the http server's requestTimeout): a
// connection checker reports a request whose body has not fully arrived in time as a 'clientError'
// ERR_HTTP_REQUEST_TIMEOUT, once per request, and leaves the socket to that event's listener
// (handleClientError). A request marked here is let through instead: its socket stays open and the
// body goes on arriving. Only the migration-job records upload is marked, after authentication; a
// file of a million lines on a slow link takes as long as it takes, and the upload has an idle
// limit of its own (UPLOAD_IDLE_TIMEOUT_SECONDS). Every other request keeps the deadline, and so
// does the next request on the same keep-alive socket (the mark holds only while its request is
// incomplete).
const exempt = new WeakMap<Socket, IncomingMessage>();

export function exemptFromRequestDeadline(request: FastifyRequest): void {
  exempt.set(request.raw.socket, request.raw);
}

export function isExemptFromRequestDeadline(socket: Socket): boolean {
  const request = exempt.get(socket);
  return request !== undefined && !request.complete;
}
