import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

// Summarises a V8 .cpuprofile (from BENCH_CPU_PROF=1) by function and by package / src file, so a
// missed target can be traced to what the service spends its CPU on. Percentages are of busy time
// (the idle event loop says nothing about where the CPU goes).
//   self time (default): where the CPU was when sampled;
//   --inclusive: the share of busy samples during which a function was anywhere on the stack, so
//     "libphonenumber-js 12%" is what the phone checks cost in all, callees included.
//   --from / --to HH:MM:SS: only the samples between these wall-clock times (the times the bench log
//     prints before each row), so one profile of a whole run gives a summary per row. The profile's
//     start is read from its file name (CPU.YYYYMMDD.HHMMSS.…), to the second.
//   --filter TEXT: only the lines whose function or place contains TEXT (e.g. src/ or ajv).
// Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile | dir> [--top 30] [--inclusive]
//          [--from 10:12:05 --to 10:13:40] [--filter src/]
// A directory means its largest profile (the service's main thread; the small one is tsx's loader).
interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string' }, inclusive: { type: 'boolean' }, from: { type: 'string' }, to: { type: 'string' }, filter: { type: 'string' } },
});
const arg = positionals[0];
if (!arg) throw new Error('usage: bench/profile-summary.ts <file.cpuprofile | dir> [--top N] [--inclusive] [--from HH:MM:SS] [--to HH:MM:SS] [--filter TEXT]');
const top = Number(opts.top ?? positionals[1] ?? 30);
const file = statSync(arg).isDirectory()
  ? readdirSync(arg).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(arg, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!
  : arg;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** Microseconds since the profile began, of a wall-clock HH:MM:SS on the profile's day. */
function offsetOf(clock: string | undefined, fallback: number): number {
  if (clock === undefined) return fallback;
  const started = /CPU\.(\d{8})\.(\d{2})(\d{2})(\d{2})\./.exec(basename(file));
  const at = /^(\d{2}):(\d{2}):(\d{2})$/.exec(clock);
  if (!started || !at) throw new Error(`--from/--to need HH:MM:SS and a profile named CPU.YYYYMMDD.HHMMSS…, got ${clock} for ${basename(file)}`);
  const seconds = (h: string, m: string, s: string) => Number(h) * 3600 + Number(m) * 60 + Number(s);
  return (seconds(at[1]!, at[2]!, at[3]!) - seconds(started[2]!, started[3]!, started[4]!)) * 1e6;
}
const from = offsetOf(opts.from, -Infinity);
const to = offsetOf(opts.to, Infinity);

const where = (url: string) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.includes('/src/')) return url.slice(url.indexOf('/src/') + 1);
  if (url.includes('/bench/')) return url.slice(url.indexOf('/bench/') + 1);
  return url === '' ? '(native/vm)' : url;
};
const fnKey = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const add = (map: Map<string, number>, key: string, v: number) => map.set(key, (map.get(key) ?? 0) + v);

const fns = new Map<string, number>();
const places = new Map<string, number>();
let sampled = 0;
let busy = 0;
let clock = 0;
profile.samples.forEach((leaf, i) => {
  const t = profile.timeDeltas[i] ?? 0;
  clock += t;
  if (clock < from || clock > to) return;
  sampled += t;
  const leafNode = byId.get(leaf)!;
  const name = leafNode.callFrame.functionName;
  if (name === '(idle)' || (opts.inclusive && name === '(program)')) return;
  busy += t;
  if (!opts.inclusive) {
    add(fns, fnKey(leafNode), t);
    add(places, where(leafNode.callFrame.url), t);
    return;
  }
  const seenFns = new Set<string>();
  const seenPlaces = new Set<string>();
  for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(root)') break;
    seenFns.add(fnKey(n));
    seenPlaces.add(where(n.callFrame.url));
  }
  for (const k of seenFns) add(fns, k, t);
  for (const k of seenPlaces) add(places, k, t);
});

const kind = opts.inclusive ? 'Inclusive' : 'Self';
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${kind} time by ${title}`);
  const rows = [...map].filter(([k]) => !opts.filter || k.includes(opts.filter)).sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, v] of rows) process.stdout.write(`${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}\n`);
};
const window = opts.from || opts.to ? ` between ${opts.from ?? 'the start'} and ${opts.to ?? 'the end'}` : '';
console.log(`${file}${window}: ${(sampled / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (percentages below are of busy time${opts.inclusive ? '; a function counts while anywhere on the stack' : ''})`);
print('package / file', places);
print('function', fns);
