// What a run measures, from the environment. Defaults are the figures; BENCH_QUICK=1 is a
// ~2-minute smoke run of the same code paths.
export type BenchStore = 'postgres' | 'pglite';

export interface BenchConfig {
  readonly quick: boolean;
  /** Measured seconds per load row (a short warm-up comes first). */
  readonly seconds: number;
  /** Each ratio row alternates baseline and service this many times (noise on a shared machine). */
  readonly rounds: number;
  readonly warmupSeconds: number;
  /** Accounts of the one supplier behind the list and status rows, per store. */
  readonly accounts: Record<BenchStore, number>;
  readonly stores: readonly BenchStore[];
  /** Records of the migration-job row (account, statement, 20 transactions, 2 notes each). */
  readonly jobRecords: number;
  /** Minimal records of the upload-memory row. */
  readonly uploadRecords: number;
  /** Records of the finished job the reconciliation row reads. */
  readonly reconcileRecords: number;
  /** Accounts of the generated legacy export the convert row converts, and transactions per account. */
  readonly convertAccounts: number;
  readonly convertTransactions: number;
  /** The service's WORKER_CONCURRENCY, and the job baseline's concurrency. */
  readonly jobWorkers: number;
  /** The service's JOB_CHUNK_RECORDS, and the chunk of the job's set-based floor. */
  readonly jobChunk: number;
  /** Records of the job's per-record raw baseline (shown beside the floor; 0 leaves it out). */
  readonly jobPerRecordBaseline: number;
  /** Whether the job row runs its set-based floor (BENCH_JOB_FLOOR=0: the service only, no ratio). */
  readonly jobFloor: boolean;
  /** Rows to run (validate, staging, create, transactions, events, jobs, upload, lists, status, stats, convert); all when unset. */
  readonly only: ReadonlySet<string> | undefined;
  readonly adminUrl: string;
  readonly cpuProfile: boolean;
  readonly logLevel: string;
  readonly writeDoc: boolean;
  /** The validate row's load generator: wrk when installed (autocannon otherwise, with a note), or autocannon when asked for. */
  readonly generator: 'wrk' | 'autocannon';
  readonly wrkThreads: number;
  /** The create row's baseline: the one-statement floor, or the old per-level transaction (for comparison). */
  readonly createBaseline: 'floor' | 'levels';
  readonly connections: { validate: number; staging: number; create: number; transactions: number; pages: number; status: number; stats: number };
}

const int = (name: string, fallback: number, least = 1): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw.replaceAll('_', ''));
  if (!Number.isInteger(value) || value < least) throw new Error(`${name} must be a whole number of at least ${least}, got "${raw}"`);
  return value;
};

export function loadBenchConfig(): BenchConfig {
  const quick = ['1', 'true', 'yes'].includes((process.env.BENCH_QUICK ?? '').toLowerCase());
  const accounts = int('BENCH_ACCOUNTS', quick ? 50_000 : 1_000_000);
  const stores = (process.env.BENCH_STORES ?? 'postgres,pglite').split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of stores) if (s !== 'postgres' && s !== 'pglite') throw new Error(`BENCH_STORES: unknown store "${s}"`);
  const generator = process.env.BENCH_GENERATOR ?? 'wrk';
  if (generator !== 'wrk' && generator !== 'autocannon') throw new Error(`BENCH_GENERATOR: wrk or autocannon, got "${generator}"`);
  const createBaseline = process.env.BENCH_CREATE_BASELINE ?? 'floor';
  if (createBaseline !== 'floor' && createBaseline !== 'levels') throw new Error(`BENCH_CREATE_BASELINE: floor or levels, got "${createBaseline}"`);
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : undefined;
  return Object.freeze({
    quick,
    seconds: int('BENCH_SECONDS', quick ? 3 : 12),
    rounds: int('BENCH_ROUNDS', quick ? 1 : 3),
    warmupSeconds: int('BENCH_WARMUP_SECONDS', quick ? 1 : 2),
    // PGlite is the embedded single-process store; its list rows default to 200,000 accounts to keep a
    // full run near 15 minutes (BENCH_PGLITE_ACCOUNTS=1000000 for the full figure).
    accounts: { postgres: accounts, pglite: int('BENCH_PGLITE_ACCOUNTS', quick ? accounts : Math.min(accounts, 200_000)) },
    jobRecords: int('BENCH_JOB_RECORDS', quick ? 500 : 10_000),
    uploadRecords: int('BENCH_UPLOAD_RECORDS', quick ? 20_000 : 1_000_000),
    reconcileRecords: int('BENCH_RECONCILE_RECORDS', quick ? 10_000 : 100_000),
    jobWorkers: int('BENCH_JOB_WORKERS', 8),
    jobChunk: int('BENCH_JOB_CHUNK', 50),
    // 0 leaves the per-record baseline out (a big job's run needs only its floor).
    jobPerRecordBaseline: int('BENCH_JOB_PER_RECORD_BASELINE', quick ? 500 : 10_000, 0),
    // 0 leaves the floor out too: at a million records it alone takes the better part of an hour here,
    // and the row then reports the service's figures with no ratio.
    jobFloor: process.env.BENCH_JOB_FLOOR !== '0',
    convertAccounts: int('BENCH_CONVERT_ACCOUNTS', quick ? 20_000 : 1_000_000),
    convertTransactions: int('BENCH_CONVERT_TRANSACTIONS', 20),
    stores: stores as BenchStore[],
    only,
    adminUrl: process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    cpuProfile: process.env.BENCH_CPU_PROF === '1',
    logLevel: process.env.BENCH_LOG_LEVEL ?? 'info',
    writeDoc: process.env.BENCH_WRITE_DOC !== '0',
    generator,
    wrkThreads: int('BENCH_WRK_THREADS', 1),
    createBaseline,
    connections: {
      validate: int('BENCH_CONNECTIONS', 20),
      staging: int('BENCH_CONNECTIONS', 20),
      create: 40,
      transactions: int('BENCH_TX_CONNECTIONS', 8),
      pages: int('BENCH_PAGE_CONNECTIONS', 1),
      status: 50,
      stats: int('BENCH_STATS_CONNECTIONS', 2),
    },
  });
}
