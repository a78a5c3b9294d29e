import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

// The baselines' database access, with no service code in the way: `pg` straight to PostgreSQL, or
// PGlite's own client on a data directory of its own (PGlite serialises, as it does for the service).
export type RawTarget = { kind: 'postgres'; url: string } | { kind: 'pglite'; dataDir: string };

export type Query = <R = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<R[]>;

export interface RawDb {
  query: Query;
  /**
   * One statement prepared once per connection under `name` (PostgreSQL plans it once per
   * connection; PGlite runs it as a plain query), sent on its own: it commits by itself.
   */
  prepared<R = Record<string, unknown>>(name: string, text: string, params: unknown[]): Promise<R[]>;
  /** One transaction: BEGIN … COMMIT on one connection (ROLLBACK on error). */
  tx<T>(work: (query: Query) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openRaw(target: RawTarget, connections: number): Promise<RawDb> {
  if (target.kind === 'postgres') {
    const pool = new pg.Pool({ connectionString: target.url, max: connections });
    const query: Query = async (text, params) => (await pool.query(text, params)).rows;
    return {
      query,
      prepared: async (name, text, params) => (await pool.query({ name, text, values: params })).rows,
      async tx(work) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const result = await work(async (text, params) => (await client.query(text, params)).rows);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const db = await PGlite.create(target.dataDir);
  const query: Query = async (text, params) => (await db.query(text, params)).rows as never;
  return {
    query,
    prepared: (_name, text, params) => query(text, params),
    tx: (work) => db.transaction((trx) => work(async (text, params) => (await trx.query(text, params)).rows as never)),
    close: () => db.close(),
  };
}

export interface LoopResult {
  /** The next n: every op below it was started (warm-up included), so a later round starts here. */
  next: number;
  ok: number;
  failed: number;
  firstError: string | undefined;
  seconds: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
}

/**
 * `concurrency` loops each calling `op(n)` back to back (n counts up across loops) for `seconds`,
 * after a warm-up; `op` returns false when it has nothing left to do.
 */
export async function runLoops(
  concurrency: number, warmupSeconds: number, seconds: number, op: (n: number) => Promise<boolean>, start = 0,
): Promise<LoopResult> {
  let n = start;
  const phase = async (duration: number, record: boolean) => {
    const latencies: number[] = [];
    let failed = 0;
    let firstError: string | undefined;
    const start = performance.now();
    const end = start + duration * 1000;
    let exhausted = false;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (!exhausted && performance.now() < end) {
        const t0 = performance.now();
        try {
          if (!(await op(n++))) { exhausted = true; break; }
          if (record) latencies.push(performance.now() - t0);
        } catch (error) {
          failed += 1;
          firstError ??= (error as Error).message;
        }
      }
    }));
    return { latencies, failed, firstError, seconds: (performance.now() - start) / 1000 };
  };
  if (warmupSeconds > 0) await phase(warmupSeconds, false);
  const { latencies, failed, firstError, seconds: took } = await phase(seconds, true);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]! : 0;
  const mean = latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : 0;
  return {
    next: n, ok: latencies.length, failed, firstError, seconds: took, rps: latencies.length / took,
    latencyMs: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: latencies.at(-1) ?? 0, mean },
  };
}
