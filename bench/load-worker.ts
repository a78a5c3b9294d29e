import autocannon from 'autocannon';
import { childInput } from './lib/proc.ts';

// The load generator, in a process of its own (started by bench/lib/load.ts). It gets ready-made
// request material and only stitches it together per request, so it spends its CPU on the wire.
export type RequestSource =
  /**
   * Body templates split at a marker: request n (from `start`) sends template[i % k].join(String(i))
   * with i = n, or n % cycle to send a fixed set again and again.
   */
  | { kind: 'template'; method: 'POST'; path: string; templates: string[][]; start: number; cycle?: number }
  /** Each body once, in order from `start`; the run ends early when they run out. */
  | { kind: 'bodies'; method: 'POST'; path: string; bodies: string[]; start: number }
  | { kind: 'paths'; method: 'GET'; paths: string[] };

export interface LoadSpec {
  url: string;
  connections: number;
  seconds: number;
  warmupSeconds: number;
  headers: Record<string, string>;
  source: RequestSource;
}

export interface LoadResult {
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  seconds: number;
  rps: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** Template and body sources: the next n, so every n below it was sent (warm-up included). */
  next: number;
  /** The first non-2xx answer, to say why requests failed. */
  firstFailure: string | undefined;
  /** The generator's own CPU (user + system) over the measured run: near a core's worth, it was the bottleneck. */
  generatorCpuMs?: number | undefined;
}

let firstFailure: string | undefined;
const onResponse = (status: number, body: string) => {
  if ((status < 200 || status > 299) && firstFailure === undefined) firstFailure = `${status} ${String(body).slice(0, 300)}`;
};

type Request = { method?: string; path?: string; body?: string | Buffer; headers?: Record<string, string> };

const counter = { next: 0 };

function makeNext(source: RequestSource, stop: () => void): (req: Request) => Request {
  if (source.kind === 'template') {
    counter.next = source.start;
    return (req) => {
      const n = counter.next++;
      const index = source.cycle ? n % source.cycle : n;
      req.body = source.templates[index % source.templates.length]!.join(String(index));
      return req;
    };
  }
  if (source.kind === 'bodies') {
    counter.next = source.start;
    return (req) => {
      if (counter.next >= source.bodies.length) { stop(); counter.next = source.start; }
      req.body = source.bodies[counter.next++]!;
      return req;
    };
  }
  let n = 0;
  return (req) => {
    req.path = source.paths[n++ % source.paths.length]!;
    return req;
  };
}

async function run(spec: LoadSpec, seconds: number, next: (req: Request) => Request, holder: { stop?: () => void }) {
  const path = spec.source.kind === 'paths' ? spec.source.paths[0]! : spec.source.path;
  const instance = autocannon({
    url: `${spec.url}${path}`,
    connections: spec.connections,
    duration: seconds,
    timeout: 30,
    method: spec.source.method,
    headers: { ...spec.headers, ...(spec.source.method === 'POST' ? { 'content-type': 'application/json' } : {}) },
    requests: [{ setupRequest: next as never, onResponse }],
  });
  holder.stop = () => instance.stop();
  return instance;
}

const spec = childInput<LoadSpec>();
const holder: { stop?: () => void } = {};
const next = makeNext(spec.source, () => holder.stop?.());
if (spec.warmupSeconds > 0) await run(spec, spec.warmupSeconds, next, holder);
const cpuBefore = process.cpuUsage();
const result = await run(spec, spec.seconds, next, holder);
const cpu = process.cpuUsage(cpuBefore);

const codes: Record<string, number> = {};
for (const [code, value] of Object.entries(result.statusCodeStats ?? {})) codes[code] = (value as { count: number }).count;
const ok = Object.entries(codes).filter(([c]) => c.startsWith('2')).reduce((sum, [, v]) => sum + Number(v), 0);
const seconds = result.duration;
const out: LoadResult = {
  ok,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  statusCodes: codes,
  seconds,
  rps: ok / seconds,
  latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: result.latency.average },
  next: counter.next,
  firstFailure,
  generatorCpuMs: (cpu.user + cpu.system) / 1000,
};
process.stdout.write(`${JSON.stringify(out)}\n`);
