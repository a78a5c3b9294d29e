import { childInput } from '../lib/proc.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// Staging baseline: the same JSON bodies the service is sent, upserted with one raw
// INSERT … ON CONFLICT through the driver at the same concurrency. `cycle` re-stages a fixed set.
interface Input {
  target: RawTarget;
  supplierId: number;
  templates: string[][];
  start: number;
  cycle?: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
const UPSERT = `INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES ($1, $2, $3::jsonb)
  ON CONFLICT (supplier_id, external_account_number) DO UPDATE SET data = EXCLUDED.data, updated_at = now()
  RETURNING (xmax = 0) AS inserted`;
const result = await runLoops(input.connections, input.warmupSeconds, input.seconds, async (n) => {
  const index = input.cycle ? n % input.cycle : n;
  const body = input.templates[index % input.templates.length]!.join(String(index));
  // The key comes out of the body as the service's would, so both do the same parse.
  const { external_account_number: external } = JSON.parse(body) as { external_account_number: string };
  await db.query(UPSERT, [input.supplierId, external, body]);
  return true;
}, input.start);
await db.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
