import { ACCOUNT_LOCK_SPACE } from '../../src/modules/account-imports/import-locks.repository.ts';
import { childInput } from '../lib/proc.ts';
import { openRaw, runLoops, type RawTarget } from './raw-db.ts';

// Status baseline: the lookup the service makes for GET account-transfer-status/<supplier>/<ext>/,
// as raw SQL through the driver, over the same accounts at the same concurrency. The statement is
// findStatusRow (src/modules/account-imports/account-imports.repository.ts) as Kysely compiles it,
// copied as text with the same parameters: supplier and organisation, import process, account, the
// last failed attempt by a LATERAL join, and the IN_PROGRESS probe of accountLockHeld
// (import-locks.repository.ts), which reads pg_locks and takes no lock. No auth, no HTTP, no JSON:
// the floor the endpoint is measured against. A change to findStatusRow belongs here too.
interface Input { target: RawTarget; supplier: string; externals: string[]; start: number; connections: number; seconds: number; warmupSeconds: number }

const STATUS = `select "a"."number" as "service_account_number", "la"."error_code", "la"."error_detail",
    la.error_code IS NOT NULL OR la.error_detail IS NOT NULL as "failed",
    CASE WHEN a.id IS NULL THEN EXISTS (
      SELECT 1 FROM pg_locks
      WHERE locktype = 'advisory' AND granted AND objsubid = 1
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid = $1::int8::oid AND objid = ("ai"."id")::int8::oid
    ) ELSE false END as "in_progress"
  from "import_suppliers" as "s"
  inner join "account_imports" as "ai" on "ai"."supplier_id" = "s"."id" and "ai"."external_account_number" = $2
  left join "accounts" as "a" on "a"."id" = "ai"."account_id"
  left join lateral (select "ca"."error_code", "ca"."error_detail" from "create_attempts" as "ca"
    where "ca"."supplier_id" = "s"."id" and "ca"."external_account_number" = $3 and "ca"."outcome" = $4
    order by "ca"."id" desc limit $5) as "la" on true
  where "s"."code" = $6 and "s"."organisation_id" = $7`;

const input = childInput<Input>();
const db = await openRaw(input.target, input.connections);
// The service knows its caller's organisation from the token; the baseline looks it up once, untimed.
const [owner] = await db.query<{ organisation_id: number }>('SELECT organisation_id FROM import_suppliers WHERE code = $1', [input.supplier]);
if (!owner) throw new Error(`raw-status: no supplier ${input.supplier} in the baseline store`);
const result = await runLoops(input.connections, input.warmupSeconds, input.seconds, async (n) => {
  const external = input.externals[n % input.externals.length]!;
  const rows = await db.query(STATUS, [ACCOUNT_LOCK_SPACE, external, external, 'failed', 1, input.supplier, owner.organisation_id]);
  // The service answers 404 here: a lookup that finds nothing is a failed operation, not a fast one.
  if (rows.length !== 1) throw new Error(`raw-status: no import process ${external} of ${input.supplier}`);
  return true;
}, input.start);
await db.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
