import pg from 'pg';

/**
 * What a subscriber to a NOTIFY channel is told: each notice, and whether notices are arriving at all.
 * While `connected(false)` holds, notices may be missed: a subscriber that trusts memory because of
 * them must stop trusting it until `connected(true)`.
 */
export interface ChannelHandlers {
  notice(payload: string): void;
  connected(up: boolean): void;
}

/** Ends a subscription. */
export type Unlisten = () => Promise<void>;

/** The application_name of the listening sessions, so that an operator (or a test) can find them. */
export const LISTENER_APPLICATION_NAME = 'import-service-listener';
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5_000;

/**
 * LISTEN on PostgreSQL over a session of its own (a pooled client cannot hold a LISTEN: it goes back
 * to the pool). When the session is lost (the server restarts, the backend is terminated, the network
 * drops and keepalives give up), the subscriber is told, and a new session is tried with backoff until
 * one is up again. Resolves after the first attempt, whether it succeeded or not.
 */
export function listenPostgres(url: string, channel: string, handlers: ChannelHandlers, keepAliveInitialDelayMs: number): Promise<Unlisten> {
  let current: pg.Client | undefined;
  let closed = false;
  let retryMs = FIRST_RETRY_MS;
  let timer: NodeJS.Timeout | undefined;

  const attempt = (): Promise<void> => new Promise((settled) => {
    const client = new pg.Client({
      connectionString: url, application_name: LISTENER_APPLICATION_NAME, keepAlive: true, keepAliveInitialDelayMillis: keepAliveInitialDelayMs,
      connectionTimeoutMillis: 5_000,
    });
    let over = false;
    const fail = () => {
      if (over) return;
      over = true;
      client.removeAllListeners('notification');
      client.end().catch(() => {});
      if (current === client) {
        current = undefined;
        handlers.connected(false);
      }
      if (!closed) {
        timer = setTimeout(() => void attempt(), retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
      settled();
    };
    client.on('error', fail);
    client.on('end', fail);
    client.on('notification', (n) => {
      if (n.channel === channel) handlers.notice(n.payload ?? '');
    });
    client.connect()
      .then(() => client.query(`LISTEN ${pg.escapeIdentifier(channel)}`))
      .then(() => {
        if (over) return;
        if (closed) {
          over = true;
          client.end().catch(() => {});
        } else {
          current = client;
          retryMs = FIRST_RETRY_MS;
          handlers.connected(true);
        }
        settled();
      }, fail);
  });

  return attempt().then(() => async () => {
    closed = true;
    clearTimeout(timer);
    const client = current;
    current = undefined;
    if (client) await client.end().catch(() => {});
  });
}
