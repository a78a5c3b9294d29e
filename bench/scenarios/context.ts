import type { RawTarget } from '../baselines/raw-db.ts';
import type { BenchConfig, BenchStore } from '../config.ts';
import type { PayloadFactory } from '../lib/account-payload.ts';
import type { LoadResult } from '../lib/load.ts';
import type { Server } from '../lib/proc.ts';
import type { Figures, Row } from '../lib/report.ts';
import type { Target, Tenant } from '../lib/setup.ts';

// What every scenario of one store's run shares.
export interface Ctx {
  cfg: BenchConfig;
  store: BenchStore;
  target: Target;
  tenant: Tenant;
  raw: RawTarget;
  /** The same baselines' database, for untimed seeding through the store code (no process owns it between rows). */
  rawTarget: Target;
  rawTenant: Tenant;
  factory: PayloadFactory;
  /** The service; scenarios that must own the store (PGlite seeding) restart it through `restart`. */
  server(): Server;
  restart(work: () => Promise<void>): Promise<void>;
  echo: Server;
  /** Where started processes write their logs. */
  logDir: string;
  headers: Record<string, string>;
  rows: Row[];
  /** Counters of the stage-new run, so create knows which accounts are staged. */
  staged: { prefix: string; from: number; to: number } | undefined;
  created: string[];
}

export const V1 = '/v1/data-import';

export const fromLoad = (r: LoadResult): Figures => ({ rps: r.rps, p50: r.latencyMs.p50, p99: r.latencyMs.p99, non2xx: r.non2xx, errors: r.errors, codes: r.statusCodes, firstError: r.firstFailure });

export function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Is the route there at all (not 404 not_found from the router)? */
export async function routeExists(ctx: Ctx, method: string, path: string): Promise<boolean> {
  const res = await fetch(`${ctx.server().url}${path}`, {
    method, headers: { ...ctx.headers, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) }, ...(method === 'POST' ? { body: '{}' } : {}),
  });
  const body = await res.json().catch(() => ({})) as { code?: string };
  return !(res.status === 404 && body.code === 'not_found');
}
