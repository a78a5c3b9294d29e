// Typed configuration from the environment, checked once at start with one clear line per problem.
export interface Config {
  readonly host: string;
  readonly port: number;
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly logLevel: string;
  readonly bodyLimitBytes: number;
  readonly processConcurrencyLimit: number;
  readonly tokenSecret: string | undefined;
  readonly tokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  readonly documentsBucket: string;
  readonly emailTransport: 'log' | 'smtp';
  readonly smtpUrl: string | undefined;
  readonly emailFrom: string;
  readonly outboxIntervalMs: number;
  readonly shutdownTimeoutMs: number;
  /** Slow clients: the whole request (headers and body) must arrive within this. */
  readonly requestTimeoutMs: number;
  /** Slow clients: the headers must arrive within this (a slowloris is cut off here). */
  readonly headersTimeoutMs: number;
  /** An idle socket is closed after this. */
  readonly connectionTimeoutMs: number;
  readonly demoSeed: boolean;
}

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
  const emailTransport = (env.EMAIL_TRANSPORT || 'log') as Config['emailTransport'];
  if (!['log', 'smtp'].includes(emailTransport)) problems.push(`EMAIL_TRANSPORT must be log or smtp, got "${emailTransport}"`);
  if (emailTransport === 'smtp' && !env.SMTP_URL) problems.push('SMTP_URL is required when EMAIL_TRANSPORT=smtp');

  const config: Config = {
    host: env.HOST || '127.0.0.1',
    port: int('PORT', 8000, 0, 65535),
    databaseUrl,
    dataDir: env.DATA_DIR || './data',
    logLevel: env.LOG_LEVEL || 'info',
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    processConcurrencyLimit: int('PROCESS_CONCURRENCY_LIMIT', 40, 0, 10_000),
    tokenSecret,
    tokenTtlSeconds: int('TOKEN_TTL_SECONDS', 60 * 60, 1, 30 * 24 * 3600),
    refreshTokenTtlSeconds: int('REFRESH_TOKEN_TTL_SECONDS', 7 * 24 * 3600, 1, 365 * 24 * 3600),
    documentsBucket: env.DOCUMENTS_BUCKET || 's3://account-migration-documents',
    emailTransport,
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || 'no-reply@example.com',
    outboxIntervalMs: int('OUTBOX_INTERVAL_MS', 2000, 0, 3_600_000),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000),
    headersTimeoutMs: int('HEADERS_TIMEOUT_MS', 30_000, 100, 3_600_000),
    connectionTimeoutMs: int('CONNECTION_TIMEOUT_MS', 120_000, 100, 3_600_000),
    demoSeed: bool('DEMO_SEED', !databaseUrl),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
