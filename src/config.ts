// Typed configuration from the environment, checked once at start with one clear line per problem.
export interface Config {
  readonly host: string;
  readonly port: number;
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly logLevel: string;
  /** `json` (one JSON object a line, for collectors) or `pretty` (pino-pretty, for a terminal). */
  readonly logFormat: 'json' | 'pretty';
  readonly bodyLimitBytes: number;
  readonly processConcurrencyLimit: number;
  readonly tokenSecret: string | undefined;
  readonly tokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  /** The scrape credential for the domain metrics on /metrics (`Authorization: Bearer …`); unset: they are not served. */
  readonly metricsToken: string | undefined;
  readonly documentsBucket: string;
  readonly emailTransport: 'log' | 'smtp';
  readonly smtpUrl: string | undefined;
  readonly emailFrom: string;
  readonly outboxIntervalMs: number;
  /** Migration-record workers this instance runs (0: this instance only serves HTTP; no workers). */
  readonly workerConcurrency: number;
  /** Migration jobs (D11): records a job may hold, bytes an upload may carry. */
  readonly jobMaxRecords: number;
  readonly jobUploadLimitBytes: number;
  /** Transient record failures: retries (with backoff from the delay, doubling), before the record fails. */
  readonly jobRetryLimit: number;
  readonly jobRetryDelaySeconds: number;
  /** A record whose worker does not finish it in this time (a killed instance) runs again elsewhere. */
  readonly jobRecordTimeoutSeconds: number;
  /** While its supplier is paused, a record looks again after this long. */
  readonly jobPauseRecheckSeconds: number;
  /** Records of one job on the queue at once; the rest are sent as these finish. */
  readonly jobDispatchWindow: number;
  /** Records a queue job of a migration job holds at most: they are written together when they are new and clean. */
  readonly jobChunkRecords: number;
  /** How often the queue's maintenance (expiring jobs of dead workers) runs. */
  readonly queueMaintenanceIntervalSeconds: number;
  readonly shutdownTimeoutMs: number;
  /** After SIGTERM, /readyz answers 503 for this long while requests are still served, then the server closes. */
  readonly shutdownDrainMs: number;
  /** Failed token requests a minute per client address, and per API key prefix, before 429 (0: no limit). */
  readonly authFailuresPerAddress: number;
  readonly authFailuresPerKey: number;
  /** Slow clients: the whole request (headers and body) must arrive within this (migration-job uploads excepted). */
  readonly requestTimeoutMs: number;
  /** Slow clients: the headers must arrive within this (a slowloris is cut off here). */
  readonly headersTimeoutMs: number;
  /** An idle socket is closed after this. */
  readonly connectionTimeoutMs: number;
  /**
   * Migration-job record uploads are exempt from requestTimeoutMs (a large file on a slow link may
   * take hours); one that receives no byte for this long is cut off with a 408 instead.
   */
  readonly uploadIdleTimeoutSeconds: number;
  readonly demoSeed: boolean;
  /** PostgreSQL sessions: idle-in-transaction and statement time-outs (ms, 0 = off), TCP keepalive delay. */
  readonly dbIdleInTransactionTimeoutMs: number;
  readonly dbStatementTimeoutMs: number;
  readonly dbKeepAliveDelayMs: number;
  /** Webhooks (D13): the first retry's delay; each next one is 4 times later (docs/events.md). */
  readonly webhookRetryBaseMs: number;
  /** Deliveries to loopback, private and link-local addresses are refused unless this is on. */
  readonly webhookAllowPrivateNetworks: boolean;
  /** Events and webhook delivery log rows older than this are deleted daily (D13: at least 30). */
  readonly eventsRetentionDays: number;
}

// pino's levels: any other name makes pino throw at start-up, with a stack instead of one line.
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const LOG_FORMATS: string[] = ['json', 'pretty'];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
    if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
    problems.push(`${name} must be true or false, got "${raw}"`);
    return fallback;
  };

  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const tokenSecret = env.TOKEN_SECRET || undefined;
  if (tokenSecret && tokenSecret.length < 32) problems.push('TOKEN_SECRET must be at least 32 characters');
  const metricsToken = env.METRICS_TOKEN || undefined;
  if (metricsToken && !/^[\x21-\x7e]{32,}$/.test(metricsToken)) {
    problems.push('METRICS_TOKEN must be at least 32 printable characters without spaces');
  }
  const emailTransport = (env.EMAIL_TRANSPORT || 'log') as Config['emailTransport'];
  if (!['log', 'smtp'].includes(emailTransport)) problems.push(`EMAIL_TRANSPORT must be log or smtp, got "${emailTransport}"`);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  // --- logs and shutdown (docs/operations.md) ---
  const logFormat = (env.LOG_FORMAT || 'json') as Config['logFormat'];
  if (!LOG_FORMATS.includes(logFormat)) problems.push(`LOG_FORMAT must be json or pretty, got "${logFormat}"`);
  // --- end of logs and shutdown ---
  if (emailTransport === 'smtp' && !env.SMTP_URL) problems.push('SMTP_URL is required when EMAIL_TRANSPORT=smtp');

  const config: Config = {
    host: env.HOST || '127.0.0.1',
    port: int('PORT', 8000, 0, 65535),
    databaseUrl,
    dataDir: env.DATA_DIR || './data',
    logLevel,
    logFormat,
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    processConcurrencyLimit: int('PROCESS_CONCURRENCY_LIMIT', 40, 0, 10_000),
    tokenSecret,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 60 * 60, 1, 30 * 24 * 3600),
    refreshTokenTtlSeconds: int('REFRESH_TOKEN_TTL_SECONDS', 7 * 24 * 3600, 1, 365 * 24 * 3600),
    metricsToken,
    documentsBucket: env.DOCUMENTS_BUCKET || 's3://account-migration-documents',
    emailTransport,
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || 'no-reply@example.com',
    outboxIntervalMs: int('OUTBOX_INTERVAL_MS', 2000, 0, 3_600_000),
    workerConcurrency: int('WORKER_CONCURRENCY', 8, 0, 1000),
    jobMaxRecords: int('JOB_MAX_RECORDS', 1_000_000, 1, 100_000_000),
    jobUploadLimitBytes: int('JOB_UPLOAD_LIMIT_BYTES', 1024 ** 3, 1024, 64 * 1024 ** 3),
    jobRetryLimit: int('JOB_RETRY_LIMIT', 5, 0, 100),
    jobRetryDelaySeconds: int('JOB_RETRY_DELAY_SECONDS', 8, 0, 3600),
    jobRecordTimeoutSeconds: int('JOB_RECORD_TIMEOUT_SECONDS', 300, 5, 86_400),
    jobPauseRecheckSeconds: int('JOB_PAUSE_RECHECK_SECONDS', 30, 1, 3600),
    jobDispatchWindow: int('JOB_DISPATCH_WINDOW', 3200, 1, 100_000),
    jobChunkRecords: int('JOB_CHUNK_RECORDS', 50, 1, 1000),
    queueMaintenanceIntervalSeconds: int('QUEUE_MAINTENANCE_INTERVAL_SECONDS', 60, 1, 3600),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    shutdownDrainMs: int('SHUTDOWN_DRAIN_MS', 5_000, 0, 600_000),
    authFailuresPerAddress: int('AUTH_FAILURES_PER_ADDRESS', 30, 0, 100_000),
    authFailuresPerKey: int('AUTH_FAILURES_PER_KEY', 10, 0, 100_000),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),
    headersTimeoutMs: int('HEADERS_TIMEOUT_MS', 30_000, 100, 3_600_000),
    connectionTimeoutMs: int('CONNECTION_TIMEOUT_MS', 120_000, 100, 3_600_000),
    uploadIdleTimeoutSeconds: int('UPLOAD_IDLE_TIMEOUT_SECONDS', 60, 1, 3600),
    demoSeed: bool('DEMO_SEED', !databaseUrl),
    dbIdleInTransactionTimeoutMs: int('DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', 30_000, 0, 3_600_000),
    dbStatementTimeoutMs: int('DB_STATEMENT_TIMEOUT_MS', 60_000, 0, 3_600_000),
    dbKeepAliveDelayMs: int('DB_KEEPALIVE_DELAY_MS', 10_000, 1_000, 3_600_000),
    webhookRetryBaseMs: int('WEBHOOK_RETRY_BASE_MS', 5000, 10, 3_600_000),
    webhookAllowPrivateNetworks: bool('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    eventsRetentionDays: int('EVENTS_RETENTION_DAYS', 30, 30, 3650),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
