// Driver errors are recognised here, and only here, by SQLSTATE and constraint name, never by
// message text. Both pg and PGlite expose `code` and `constraint` on their errors. The one exception
// is documented on isStoreUnavailable.
export interface DriverError { code?: unknown; constraint?: unknown; message?: unknown }

const SQLSTATE = {
  uniqueViolation: '23505',
  /** Text the store cannot keep: NUL in text (22021 character_not_in_repertoire), unpaired surrogates in jsonb (22P05), nesting past jsonb's depth (54001). */
  unstorableInput: ['22021', '22P05', '54001'],
  /**
   * The server went away, or ended this session: admin_shutdown, crash_shutdown, cannot_connect_now,
   * the connection_exception class, and the session timeouts (idle_in_transaction_session_timeout,
   * 25P03: a process frozen inside a transaction reads it as the answer to its next statement;
   * idle_session_timeout, 57P05). The session's transaction was rolled back with it. And no session
   * to be had: too_many_connections (53300, the server's or the role's connection limit reached, as
   * when more instances start than max_connections allows their pools).
   */
  unavailable: ['57P01', '57P02', '57P03', '08000', '08003', '08006', '25P03', '57P05', '53300'],
  /** The server rolled the transaction back to let another go on: deadlock_detected, serialization_failure. */
  conflict: ['40P01', '40001'],
  /** query_canceled: the statement ran past the session's statement_timeout (DB_STATEMENT_TIMEOUT_MS), and was stopped. */
  timeout: ['57014'],
} as const;

/** Socket-level failures node reports while reaching the server. */
const SOCKET_CODES = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'];

/**
 * pg's own failures carry no code at all (they come from the client library, not the server): a
 * client whose connection broke, and the pool's connect timeout. Their message is all there is, so
 * these exact messages of pg and pg-pool are matched, and nothing else is.
 */
const PG_CODELESS_UNAVAILABLE = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)/;

const codeOf = (error: unknown): string => {
  const code = (error as DriverError | null)?.code;
  return typeof code === 'string' ? code : '';
};

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  return codeOf(error) === SQLSTATE.uniqueViolation
    && (constraint === undefined || (error as DriverError).constraint === constraint);
}

/** Input the validator let through that the store still cannot keep: a client error, not ours. */
export function isUnstorableInput(error: unknown): boolean {
  return (SQLSTATE.unstorableInput as readonly string[]).includes(codeOf(error));
}

export type RetryableStoreFailure = 'unavailable' | 'conflict' | 'timeout';

/**
 * What each retryable store failure tells whoever sent the work, a request or a job record's step
 * (the same words for both: the work was the same), and how long to wait before sending it again.
 */
export const STORE_FAILURES: Readonly<Record<RetryableStoreFailure, { detail: string; retryAfterSeconds: number }>> = {
  conflict: { detail: 'The database rolled this back because it conflicted with other work; nothing of it was written. Retry it.', retryAfterSeconds: 1 },
  timeout: { detail: 'The database stopped this at its time limit (it is busy, or this asked for a lot at once). Retry it later.', retryAfterSeconds: 10 },
  unavailable: { detail: 'The database is unavailable; retry shortly.', retryAfterSeconds: 1 },
};

/**
 * Why a store error is worth retrying as it is, or undefined when it is not: `unavailable`, the
 * store was away (isStoreUnavailable); `conflict`, the server rolled the transaction back because it
 * met another one, a deadlock (each waiting for a row the other holds; PostgreSQL aborts one) or a
 * serialization failure. Either way nothing of the transaction was kept, and the same work tried
 * again normally succeeds. The one deadlock seen (the stats counters' rows taken in opposite orders
 * at commit) cannot happen since migration 023; any other is still answered this way. `timeout`:
 * the server stopped a statement at its time limit (a busy or struggling server; its transaction,
 * if any, is rolled back): worth trying again later, and no bug of the request's.
 */
export function retryableStoreFailure(error: unknown): RetryableStoreFailure | undefined {
  if (isStoreUnavailable(error)) return 'unavailable';
  const code = codeOf(error);
  if ((SQLSTATE.conflict as readonly string[]).includes(code)) return 'conflict';
  return (SQLSTATE.timeout as readonly string[]).includes(code) ? 'timeout' : undefined;
}

/** The store is unreachable (a restart, a network cut): a retryable condition rather than a bug. */
export function isStoreUnavailable(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== '') return (SQLSTATE.unavailable as readonly string[]).includes(code) || SOCKET_CODES.includes(code);
  const message = (error as DriverError | null)?.message;
  return typeof message === 'string' && PG_CODELESS_UNAVAILABLE.test(message);
}
