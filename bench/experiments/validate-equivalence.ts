import { join } from 'node:path';
import { loadPayloadFactory } from '../lib/account-payload.ts';
import { ROOT } from '../lib/proc.ts';
import { bodyCheckOf } from './body-check.ts';

// A change to the validator that is meant to be faster, not different, proved on many bodies: every
// body is checked by an earlier copy of src/ and by the current one, each as the route does it (the
// JSON text parsed, the body-reading passes over the text, the compiled AccountData validator), and
// the answers (null, or the field errors in order) must be equal, byte for byte. The bodies are the
// bench's valid account with one to three random changes each: fields removed, nulled, retyped,
// emptied or made too long, bad dates, phones, countries and emails, NUL and lone surrogates, unknown
// fields, numbers the parse changes, duplicate identifiers, reversed date ranges.
//
// The copy must sit inside the project, so that its imports find node_modules (scratch/ is ignored by git):
//   mkdir -p scratch/old && git archive HEAD src | tar -x -C scratch/old    # or any earlier commit
//   OLD=scratch/old/src node --import tsx bench/experiments/validate-equivalence.ts [bodies=20000] [seed=1]

const oldDir = process.env.OLD;
if (!oldDir) throw new Error('OLD=<a copy of an earlier src/> is required');
const count = Number(process.argv[2] ?? 20_000);
let seed = Number(process.argv[3] ?? 1);
const random = () => {
  // mulberry32: the same bodies for the same seed.
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const STRINGS = ['', ' ', 'x', 'x'.repeat(101), 'x'.repeat(600), 'a\u0000b', 'a\ud800b', '\udc00', '😀', ' GB', 'GB ', 'gb', 'ZZ', 'GB',
  'UK', '2024-02-30', '2024-02-29', '2023-02-29', '1899-12-31', '1900-01-01', '2100-12-31', '2101-01-01', '2999-01-01',
  '2024-01-10T09:30:00Z', '2024-01-10T24:00:00Z', '2024-01-10T09:30:00+01:00', '2024-01-10T09:30:00.1234567Z',
  '1850-01-01T00:00:00Z', '+447911123456', '+447700900123', '07911 123456', '020 7946 0018', '0113 496 0123', '+1 202 555 0143',
  '+12025550143', '12345', '+44', 'not a phone', 'alice@example.com', 'alice@', 'a@b', '@example.com', 'ELECTRICITY', 'GAS',
  'WATER_HEATER', 'KWH_IMPORT', 'KWH', '12345.6', '-1', '1.1234567', '1234567890123', 'letters/a.pdf', '/abs/path', 'a/../b',
  'a//b', 'a\\b', '.', '..', 'a/b', 'SINGLE', 'THREE', 'ACTIVE', 'MPAN-1'];
const VALUES: unknown[] = [null, true, false, 0, -1, 1, 1.5, 1.123, 2 ** 31, 1e21, [], [1], {}, { a: 1 }, ...STRINGS];
const NUMBER_LITERALS = ['1e400', '-1e400', '1e-400', '0.1000000000000000055511151231257827', '12345678901234567890',
  '1.00000000000000001', '1E2', '1.5e-3', '12e3', '100.000', '0.000001', '1.0000001', '123456789012345.6'];

/** Every [parent, key] of a document, objects and arrays both. */
function slotsOf(root: unknown): Array<[Record<string, unknown> | unknown[], string | number]> {
  const slots: Array<[Record<string, unknown> | unknown[], string | number]> = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) node.forEach((v, i) => { slots.push([node, i]); stack.push(v); });
    else if (node && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) { slots.push([node as Record<string, unknown>, k]); stack.push(v); }
    }
  }
  return slots;
}

const MARK = '"__number_literal__"';

function mutated(body: Record<string, any>): string {
  const changes = 1 + Math.floor(random() * 3);
  let literal: string | undefined;
  for (let c = 0; c < changes; c += 1) {
    const slots = slotsOf(body);
    const [parent, key] = pick(slots);
    const kind = random();
    if (kind < 0.15) {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key as string];
    } else if (kind < 0.7) {
      (parent as any)[key] = structuredClone(pick(VALUES));
    } else if (kind < 0.8 && !Array.isArray(parent)) {
      parent[pick(['extra', 'Extra', 'a\u0000', 'b\udfff', 'unknown_occupier', 'ledgers', 'statements', 'user_details', 'notes', 'landline'])] = pick(VALUES);
    } else if (kind < 0.9) {
      literal = pick(NUMBER_LITERALS);
      (parent as any)[key] = '__number_literal__';
    } else {
      // Cross-field: a second electricity point with the first one's identifier, or a reversed range.
      const point = body.supply_addresses?.[0]?.supply_points?.[0];
      if (point && typeof point === 'object') {
        if (random() < 0.5) body.supply_addresses[0].supply_points.push(structuredClone(point));
        else point.last_billed_to_date = '2000-01-01';
      }
    }
  }
  const text = JSON.stringify(body);
  return literal ? text.replace(MARK, literal) : text;
}

const { factory } = await loadPayloadFactory();
const sides = { old: await bodyCheckOf(oldDir), new: await bodyCheckOf(join(ROOT, 'src')) };
let differences = 0;
let valid = 0;
for (let i = 0; i < count; i += 1) {
  const text = mutated(factory('BENCH'));
  const before = JSON.stringify(sides.old(text));
  const after = JSON.stringify(sides.new(text));
  if (before === 'null') valid += 1;
  if (before !== after) {
    differences += 1;
    if (differences <= 5) console.log(`body ${i}: ${text.slice(0, 300)}…\n  old: ${before}\n  new: ${after}`);
  }
}
console.log(`${count} bodies (${valid} valid), ${differences} different answers`);
if (differences > 0) process.exitCode = 1;
