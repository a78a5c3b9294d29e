import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadResult, LoadSpec } from './load.ts';

// The validate row's load generator: Debian's `wrk` (C, epoll) as a child process. autocannon, a
// Node process on the same 2 cores, saturated its own core before a bare echo did (the echo reached
// ~7,500 req/s under it against 18,600 with a separate generator), so the echo's figure, and with it
// the row's ratio, measured the generator. wrk spends a fraction of that per request; its own CPU is
// reported with every run, so a reader can see it was not the bottleneck. The request material is
// the same as load-worker.ts's: body templates split at a marker, joined with the request's number.

/** wrk's path, or undefined when it is not installed (`apt-get install wrk`). */
export function wrkPath(): string | undefined {
  const found = spawnSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() ? found.stdout.trim() : undefined;
}

/** A Lua string literal of any text: bytes outside printable ASCII (and `"`, `\`) as decimal escapes. */
function luaString(text: string): string {
  let out = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/**
 * The script: each thread numbers its requests start + offset, + threads, … (disjoint across threads);
 * `response` counts status codes and keeps the first failure; `done` prints one JSON line with the
 * counts, the latency percentiles (µs) and the process's own CPU ticks from /proc/self/stat, read
 * after every thread has ended.
 */
function script(spec: LoadSpec, threads: number): string {
  const source = spec.source;
  if (source.kind !== 'template') throw new Error(`wrk: only template sources are supported, not ${source.kind}`);
  const headers = { ...spec.headers, 'content-type': 'application/json' };
  return `
offset = 0
stride = ${threads}
counter = 0
codes = {}
first_failure = ""
local templates = { ${source.templates.map((t) => `{ ${t.map(luaString).join(', ')} }`).join(',\n')} }
local k = #templates
local start = ${source.start}
local cycle = ${source.cycle ?? 0}
local path = ${luaString(source.path)}
wrk.method = "POST"
${Object.entries(headers).map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`).join('\n')}
local threads = {}
function setup(thread)
  thread:set("offset", #threads)
  table.insert(threads, thread)
end
function request()
  local n = start + offset + counter * stride
  counter = counter + 1
  local i = n
  if cycle > 0 then i = n % cycle end
  return wrk.format(nil, path, nil, table.concat(templates[(i % k) + 1], tostring(i)))
end
function response(status, headers, body)
  codes[status] = (codes[status] or 0) + 1
  if (status < 200 or status > 299) and first_failure == "" then first_failure = status .. " " .. string.sub(body or "", 1, 300) end
end
local function quote(s)
  return '"' .. string.gsub(s, '[%c"\\\\]', function(c) return string.format("\\\\u%04x", string.byte(c)) end) .. '"'
end
function done(summary, latency, requests)
  local all, most, failure = {}, 0, ""
  for _, thread in ipairs(threads) do
    for code, count in pairs(thread:get("codes")) do all[code] = (all[code] or 0) + count end
    most = math.max(most, thread:get("counter"))
    if failure == "" then failure = thread:get("first_failure") end
  end
  local parts = {}
  for code, count in pairs(all) do table.insert(parts, string.format('"%d":%d', code, count)) end
  local f = io.open("/proc/self/stat", "r")
  local stat = f:read("*a")
  f:close()
  local fields = {}
  for field in string.gmatch(string.sub(stat, string.find(stat, ")", 1, true) + 2), "%S+") do table.insert(fields, field) end
  local e = summary.errors
  io.write(string.format('\\n{"codes":{%s},"durationUs":%d,"errors":%d,"timeouts":%d,"next":%d,"p50":%f,"p90":%f,"p99":%f,"max":%f,"mean":%f,"cpuTicks":%d,"firstFailure":%s}\\n',
    table.concat(parts, ","), summary.duration, e.connect + e.read + e.write, e.timeout, start + most * stride,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    tonumber(fields[12]) + tonumber(fields[13]), quote(failure)))
end
`;
}

interface WrkOutput {
  codes: Record<string, number>; durationUs: number; errors: number; timeouts: number; next: number;
  p50: number; p90: number; p99: number; max: number; mean: number; cpuTicks: number; firstFailure: string;
}

/** One wrk run (no warm-up of its own: a warm-up is a run of its own, as in runLoad). */
export async function runWrk(spec: LoadSpec, threads: number): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  const file = join(dir, 'load.lua');
  writeFileSync(file, script(spec, threads));
  const path = spec.source.kind === 'paths' ? spec.source.paths[0]! : spec.source.path;
  const child = spawn('wrk', ['-t', String(threads), '-c', String(spec.connections), '-d', `${spec.seconds}s`, '--timeout', '30s', '-s', file, `${spec.url}${path}`],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  const [code] = await once(child, 'exit') as [number | null];
  rmSync(dir, { recursive: true, force: true });
  const line = stdout.split('\n').findLast((l) => l.startsWith('{'));
  if (code !== 0 || !line) throw new Error(`wrk exited with ${code}:\n${stdout.slice(-2000)}`);
  const out = JSON.parse(line) as WrkOutput;
  const ok = Object.entries(out.codes).filter(([c]) => c.startsWith('2')).reduce((sum, [, n]) => sum + n, 0);
  const answered = Object.values(out.codes).reduce((sum, n) => sum + n, 0);
  const seconds = out.durationUs / 1e6;
  const ms = (us: number) => us / 1000;
  if (out.firstFailure) process.stderr.write(`  first failure: ${out.firstFailure}\n`);
  return {
    ok, non2xx: answered - ok, errors: out.errors + out.timeouts, timeouts: out.timeouts, statusCodes: out.codes, seconds, rps: ok / seconds,
    latencyMs: { p50: ms(out.p50), p90: ms(out.p90), p99: ms(out.p99), max: ms(out.max), mean: ms(out.mean) },
    next: out.next, firstFailure: out.firstFailure || undefined,
    // /proc ticks are 1/100 s (USER_HZ); the whole process, from its start to the end of the run.
    generatorCpuMs: out.cpuTicks * 10,
  };
}
