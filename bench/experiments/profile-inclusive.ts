import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// Inclusive time of a V8 .cpuprofile: for each function (and each package / src file), the share of
// busy samples during which it was anywhere on the stack, so "libphonenumber-js 12%" means what the
// phone checks cost in all, callees included. bench/profile-summary.ts gives self time.
// Usage: node --import tsx bench/experiments/profile-inclusive.ts <file.cpuprofile | dir> [top=30] [filter]
// `filter` keeps only the functions whose name or place contains it (e.g. src/ or ajv).
interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; samples: number[]; timeDeltas: number[] }

const arg = process.argv[2];
if (!arg) throw new Error('usage: bench/experiments/profile-inclusive.ts <file.cpuprofile | dir> [top] [filter]');
const top = Number(process.argv[3] ?? 30);
const filter = process.argv[4];
const file = statSync(arg).isDirectory()
  ? readdirSync(arg).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(arg, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]!
  : arg;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const where = (url: string) => {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.includes('/src/')) return url.slice(url.indexOf('/src/') + 1);
  if (url.includes('/bench/')) return url.slice(url.indexOf('/bench/') + 1);
  return url === '' ? '(native/vm)' : url;
};
const fnKey = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const fns = new Map<string, number>();
const places = new Map<string, number>();
let busy = 0;
profile.samples.forEach((leaf, i) => {
  const t = profile.timeDeltas[i] ?? 0;
  const leafNode = byId.get(leaf)!;
  const name = leafNode.callFrame.functionName;
  if (name === '(idle)' || name === '(program)') return;
  busy += t;
  const seenFns = new Set<string>();
  const seenPlaces = new Set<string>();
  for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(root)') break;
    seenFns.add(fnKey(n));
    seenPlaces.add(where(n.callFrame.url));
  }
  for (const k of seenFns) fns.set(k, (fns.get(k) ?? 0) + t);
  for (const k of seenPlaces) places.set(k, (places.get(k) ?? 0) + t);
});

const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  const rows = [...map].filter(([k]) => !filter || k.includes(filter)).sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, v] of rows) process.stdout.write(`${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}\n`);
};
console.log(`${file}: ${(busy / 1e6).toFixed(1)} s busy (inclusive: a function counts while anywhere on the stack)`);
print('Inclusive time by package / file', places);
print('Inclusive time by function', fns);
