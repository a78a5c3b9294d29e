import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Summarises a V8 .cpuprofile (from BENCH_CPU_PROF=1): self time by function and by package/file,
// so a missed target can be traced to what the service spends its CPU on.
// Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile | dir> [top=30]
interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

const arg = process.argv[2];
if (!arg) throw new Error('usage: bench/profile-summary.ts <file.cpuprofile | dir> [top]');
const top = Number(process.argv[3] ?? 30);
const file = statSync(arg).isDirectory()
  ? readdirSync(arg).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(arg, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]!
  : arg;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const all = [...self.values()].reduce((a, b) => a + b, 0);
// Percentages are of busy time: the idle event loop says nothing about where the CPU goes.
const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
const total = all - idle;

const where = (url: string) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.includes('/src/')) return url.slice(url.indexOf('/src/') + 1);
  return url === '' ? '(native/vm)' : url;
};
const add = (map: Map<string, number>, key: string, v: number) => map.set(key, (map.get(key) ?? 0) + v);
const fns = new Map<string, number>();
const places = new Map<string, number>();
for (const [id, t] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  if (functionName === '(idle)') continue;
  add(fns, `${functionName || '(anonymous)'} ${where(url)}:${lineNumber + 1}`, t);
  add(places, where(url), t);
}
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}\n`);
};
console.log(`${file}: ${(all / 1e6).toFixed(1)} s sampled, ${(total / 1e6).toFixed(1)} s busy (percentages below are of busy time)`);
print('Self time by package / file', places);
print('Self time by function', fns);
