import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { accountTemplates, loadPayloadFactory } from '../lib/account-payload.ts';
import { ROOT } from '../lib/proc.ts';
import { bodyCheckOf } from './body-check.ts';

// The validate-account body path in one process, without HTTP, auth or the store: what the route
// pays per body for checking it. Each body goes through what the app does between the socket and
// the handler: the JSON parse, the passes over the text that body-encoding.ts makes (numbers the
// parse changed, json-numbers.ts; text PostgreSQL cannot store, unstorable-text.ts, where the
// version has it), and the body validator compiled exactly as app.ts's validator compiler does
// (compileValidator(schema, bodyAjv)) for the route's schema, AccountData.
//
//   node --import tsx bench/experiments/validate-profile.ts [bodies=20000] [rounds=7]
//   node --cpu-prof --cpu-prof-dir=.bench-data/vprof --import tsx bench/experiments/validate-profile.ts 50000 1
//   node --import tsx bench/profile-summary.ts .bench-data/vprof --inclusive    (without --inclusive: self time)
//
// With OLD=<dir>, a copy of an earlier src/, both are timed in the same process, alternating round
// by round, and the ratio is printed: the machine is shared, so only same-run comparisons mean
// anything. The copy must sit inside the project so that its imports find node_modules:
// `mkdir -p scratch/old && git archive HEAD src | tar -x -C scratch/old`, then OLD=scratch/old/src
// (scratch/ is ignored by git). The bodies are the bench's (bench/lib/account-payload.ts over
// test/support/payloads.ts accountPayload), each with its own account number and identifiers, as
// the load generator sends them.

interface Side {
  name: string;
  check(text: string): unknown;
}

const sideOf = async (name: string, srcDir: string): Promise<Side> => ({ name, check: await bodyCheckOf(srcDir) });

const bodies = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 7);
const { factory, source } = await loadPayloadFactory();
const templates = accountTemplates(factory, 'BENCH', 'VP', 50);
const texts = Array.from({ length: 1000 }, (_, i) => templates[i % templates.length]!.join(String(i)));

const sides: Side[] = [];
const oldDir = process.env.OLD;
if (oldDir) {
  if (!existsSync(join(oldDir, 'core/validation.ts'))) throw new Error(`OLD=${oldDir} holds no core/validation.ts`);
  sides.push(await sideOf('old', oldDir));
}
// ONLY=old profiles the earlier copy alone (with --cpu-prof).
if (process.env.ONLY !== 'old') sides.push(await sideOf('new', join(ROOT, 'src')));

// Every body must be valid on every side, or the figure would time error paths.
for (const side of sides) {
  const answer = side.check(texts[0]!);
  if (answer !== null) throw new Error(`${side.name}: the bench body is refused: ${JSON.stringify(answer)}`);
}

function run(side: Side, count: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i += 1) side.check(texts[i % texts.length]!);
  return Number(process.hrtime.bigint() - started) / 1000 / count;
}

for (const side of sides) run(side, Math.min(bodies, 5_000)); // warm-up: compile, JIT
const times = new Map<string, number[]>(sides.map((s) => [s.name, []]));
for (let r = 0; r < rounds; r += 1) {
  const order = r % 2 === 0 ? sides : [...sides].reverse();
  for (const side of order) times.get(side.name)!.push(run(side, bodies));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`${bodies} bodies × ${rounds} rounds, ${Math.round(texts[0]!.length / 102.4) / 10} KB each (${source})`);
for (const side of sides) {
  const xs = times.get(side.name)!;
  console.log(`${side.name.padEnd(4)} median ${median(xs).toFixed(1)} µs/body  (rounds: ${xs.map((x) => x.toFixed(1)).join(', ')})`);
}
if (sides.length === 2) {
  console.log(`new/old: ${(median(times.get('new')!) / median(times.get('old')!)).toFixed(3)}`);
}
