import type { LoopResult } from '../baselines/raw-db.ts';
import type { LoadResult } from '../lib/load.ts';
import type { Figures } from '../lib/report.ts';
import type { Ctx } from './context.ts';

// A ratio row measures baseline and service alternately, BENCH_ROUNDS times, each round a share of
// BENCH_SECONDS: on a shared machine the load of the neighbours then weighs on both sides alike.
export interface Round {
  cpuMs?: number | undefined; ok: number; seconds: number; p50: number; p99: number; non2xx: number; errors: number; codes: Record<string, number>; next: number;
  firstError?: string | undefined;
  /** The load generator's own CPU over the round, when it reports it. */
  generatorCpuMs?: number | undefined;
}
export type Side = (seconds: number, warmupSeconds: number, start: number) => Promise<Round>;

export const fromLoadRound = (r: LoadResult): Round => ({
  ok: r.ok, seconds: r.seconds, p50: r.latencyMs.p50, p99: r.latencyMs.p99, non2xx: r.non2xx, errors: r.errors, codes: r.statusCodes, next: r.next,
  firstError: r.firstFailure, generatorCpuMs: r.generatorCpuMs,
});
export const fromLoopRound = (r: LoopResult): Round => ({
  ok: r.ok, seconds: r.seconds, p50: r.latencyMs.p50, p99: r.latencyMs.p99, non2xx: 0, errors: r.failed, codes: {}, next: r.next,
  firstError: r.firstError,
});

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
};

function combine(rounds: Round[]): Figures & { next: number } {
  const codes: Record<string, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.codes)) codes[k] = (codes[k] ?? 0) + v;
  const seconds = rounds.reduce((a, r) => a + r.seconds, 0);
  const cpu = rounds.every((r) => r.cpuMs !== undefined) ? rounds.reduce((a, r) => a + r.cpuMs!, 0) : undefined;
  const ok = rounds.reduce((a, r) => a + r.ok, 0);
  const generator = rounds.every((r) => r.generatorCpuMs !== undefined) ? rounds.reduce((a, r) => a + r.generatorCpuMs!, 0) : undefined;
  return {
    rps: ok / seconds,
    cpuMsPerRequest: cpu === undefined || ok === 0 ? undefined : cpu / ok,
    generatorCoreShare: generator === undefined ? undefined : generator / (seconds * 1000),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    non2xx: rounds.reduce((a, r) => a + r.non2xx, 0),
    errors: rounds.reduce((a, r) => a + r.errors, 0),
    codes,
    firstError: rounds.find((r) => r.firstError !== undefined)?.firstError,
    next: rounds.at(-1)?.next ?? 0,
  };
}

export async function paired(ctx: Ctx, baseline: Side, service: Side, start = { baseline: 0, service: 0 }) {
  const rounds = ctx.cfg.rounds;
  const seconds = Math.max(1, Math.round(ctx.cfg.seconds / rounds));
  const b: Round[] = [];
  const s: Round[] = [];
  let next = { ...start };
  for (let i = 0; i < rounds; i++) {
    const warmup = i === 0 ? ctx.cfg.warmupSeconds : 0;
    b.push(await baseline(seconds, warmup, next.baseline));
    s.push(await service(seconds, warmup, next.service));
    next = { baseline: b.at(-1)!.next, service: s.at(-1)!.next };
  }
  return { baseline: combine(b), service: combine(s) };
}
