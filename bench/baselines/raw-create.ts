import { childInput } from '../lib/proc.ts';
import { createAccount } from './raw-account.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// Account-creation baseline: for each staged account, one transaction that reads the staged data
// and inserts the same rows the service makes (migrations/002: account, customers, supply addresses,
// supply points, agreements, meters, registers, transfer readings, notes, the attempt record), level by
// level with multi-row INSERTs (raw-account.ts). No validation, no HTTP: the floor the service is measured against.
interface Input { target: RawTarget; supplierId: number; teamId: number; connections: number; seconds: number; warmupSeconds: number }

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
const pending = (await db.query<{ external_account_number: string }>(
  'SELECT external_account_number FROM account_imports WHERE supplier_id = $1 AND account_id IS NULL ORDER BY id', [input.supplierId]))
  .map((r) => r.external_account_number);
const result = await runLoops(input.connections, input.warmupSeconds, input.seconds, async (n) => {
  const external = pending[n];
  if (external === undefined) return false;
  await db.tx((q) => createAccount(q, input, external));
  return true;
});
await db.close();
process.stdout.write(`${JSON.stringify({ ...result, available: pending.length })}\n`);
