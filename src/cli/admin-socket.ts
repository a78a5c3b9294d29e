import { chmodSync, unlinkSync } from 'node:fs';
import { once } from 'node:events';
import { createConnection, createServer, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { CliError, messageOf } from './cli-error.ts';
import { runAdminCommand } from './admin-runner.ts';

// The admin socket: how import-admin works beside a server that holds the embedded store (which
// serves one process). The server listens on DATA_DIR/admin.sock, a Unix socket only its user may
// open (mode 0600; never TCP). The CLI sends one request, a JSON line {argv, json}; the server runs
// the same command runner the CLI would, against its own open store, and answers one JSON line
// {stdout, stderr, status}, which the CLI prints as it is. Not used with PostgreSQL, where the CLI
// opens the database itself.
export const ADMIN_SOCKET = 'admin.sock';

export interface AdminRequest { argv: string[]; json: boolean }
export interface AdminReply { stdout: string; stderr: string; status: number }

/** Far above any real command line; a peer sending more is cut off. */
const MAX_REQUEST_BYTES = 1 << 20;
/** A connection that sends no complete request in this time is closed. */
const IDLE_MS = 30_000;

export const adminSocketPath = (dataDir: string): string => join(resolve(dataDir), ADMIN_SOCKET);

export interface AdminSocketServer {
  readonly path: string;
  /** Stops accepting, waits for the commands in hand, and removes the socket file. */
  close(): Promise<void>;
}

export interface AdminSocketDeps {
  db: Kysely<Database>;
  /**
   * Awaited after each command, before the answer: the server's in-memory state (the directory of
   * keys and suppliers) reflects the change by then, so a revoked key is refused at once.
   */
  settle(): Promise<void>;
}

export async function serveAdminSocket(dataDir: string, deps: AdminSocketDeps): Promise<AdminSocketServer> {
  const path = adminSocketPath(dataDir);
  // This process holds DATA_DIR's lock, so a socket file there is a dead server's.
  removeQuietly(path);
  const connections = new Map<Socket, { busy: boolean }>();
  const server = createServer((socket) => {
    const state = { busy: false };
    connections.set(socket, state);
    socket.on('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setTimeout(IDLE_MS, () => { if (!state.busy) socket.destroy(); });
    let buffered = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      if (state.busy) return;
      buffered += chunk;
      const end = buffered.indexOf('\n');
      if (end < 0) {
        if (buffered.length > MAX_REQUEST_BYTES) socket.destroy();
        return;
      }
      state.busy = true;
      void answer(buffered.slice(0, end), deps).then((reply) => socket.end(`${JSON.stringify(reply)}\n`));
    });
  });
  // The socket file is created with the process's umask: narrow it for the bind (which happens
  // within listen(), synchronously), so that no other user can connect even for an instant.
  const umask = process.umask(0o177);
  try {
    server.listen(path);
  } finally {
    process.umask(umask);
  }
  await once(server, 'listening');
  chmodSync(path, 0o600);
  return {
    path,
    async close() {
      const closed = new Promise<void>((done) => server.close(() => done()));
      for (const [socket, state] of connections) if (!state.busy) socket.destroy();
      await closed;
      removeQuietly(path);
    },
  };
}

async function answer(line: string, deps: AdminSocketDeps): Promise<AdminReply> {
  let stdout = '';
  let stderr = '';
  const io = { out: (text: string) => { stdout += text; }, err: (text: string) => { stderr += text; } };
  const request = parseRequest(line);
  if (!request) return { stdout, stderr: 'import-admin: the server could not read the request\n', status: 1 };
  const status = await runAdminCommand(request.argv, { use: (work) => work(deps.db) }, io);
  if (status === 0) await deps.settle().catch(() => {});
  return { stdout, stderr, status };
}

function parseRequest(line: string): AdminRequest | undefined {
  try {
    const value = JSON.parse(line) as Partial<AdminRequest>;
    if (Array.isArray(value.argv) && value.argv.every((a) => typeof a === 'string')) return { argv: value.argv, json: value.json === true };
  } catch { /* not JSON */ }
  return undefined;
}

/** How long the CLI waits for a server's answer: far longer than any command takes, short of waiting for ever. */
export const ADMIN_REPLY_MS = 60_000;

/**
 * Sends one command to the server holding the embedded store. Undefined when no server listens
 * there (no socket file, or a dead server's), so the caller opens the store itself. A server that
 * takes the connection but never answers (stopped with SIGSTOP, wedged) is given `replyMs`, then
 * reported: the command may or may not run once it goes on.
 */
export function sendToAdminSocket(path: string, request: AdminRequest, replyMs = ADMIN_REPLY_MS): Promise<AdminReply | undefined> {
  return new Promise((settle, fail) => {
    const socket = createConnection(path);
    let connected = false;
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new CliError('store_unavailable', `the server holding the store did not answer on its admin socket ${path} within ${replyMs / 1000} s `
        + '(it may be stopped or overloaded); the command may or may not have run'));
    }, replyMs);
    const done = () => clearTimeout(timer);
    socket.on('connect', () => {
      connected = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.setEncoding('utf8').on('data', (chunk: string) => { text += chunk; });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      done();
      if (!connected && (error.code === 'ENOENT' || error.code === 'ECONNREFUSED')) settle(undefined);
      else fail(new CliError('store_unavailable', `cannot use the server's admin socket ${path}: ${messageOf(error)}`));
    });
    socket.on('end', () => {
      done();
      const reply = parseReply(text);
      if (reply) settle(reply);
      else fail(new CliError('store_unavailable', `the server closed its admin socket ${path} without an answer (it may be stopping); the command may not have run`));
    });
  });
}

function parseReply(text: string): AdminReply | undefined {
  try {
    const value = JSON.parse(text) as Partial<AdminReply>;
    if (typeof value.stdout === 'string' && typeof value.stderr === 'string' && Number.isInteger(value.status)) {
      return { stdout: value.stdout, stderr: value.stderr, status: value.status! };
    }
  } catch { /* cut short */ }
  return undefined;
}

function removeQuietly(path: string): void {
  try { unlinkSync(path); } catch { /* not there */ }
}
