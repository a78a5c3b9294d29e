import { sql } from 'kysely';
import type { Store } from '../../src/db/store.ts';
import type { Ctx } from './context.ts';

// Untimed set-up of the data a row measures, written straight into a database: the service's or the
// baselines' own. Every row seeds what it reads (or finds it left by an earlier row), so a row run
// alone with BENCH_ONLY measures the same thing as in a full run.

/** Opens one of the two databases for `work`; PGlite's data directory belongs to one process, so the service stops meanwhile. */
export async function withDatabase(ctx: Ctx, which: 'service' | 'raw', work: (store: Store) => Promise<void>): Promise<void> {
  const target = which === 'service' ? ctx.target : ctx.rawTarget;
  const run = async () => {
    const store = await target.open();
    try { await work(store); } finally { await store.close(); }
  };
  if (which === 'service' && ctx.store === 'pglite') await ctx.restart(run);
  else await run();
}

/** Any character JSON.stringify never leaves raw in its output (it escapes control characters) and PostgreSQL text accepts. */
const HOLE = '\u0001';

/**
 * Stages accounts `<prefix>-<n>` for n in [from, to) in one statement, each with the body staging is
 * sent for n (template n % k with n in its holes, bench/lib/account-payload.ts): what staging stores.
 */
export async function stageUntimed(store: Store, supplierId: number, prefix: string, templates: string[][], from: number, to: number): Promise<void> {
  const filled = JSON.stringify(templates.map((t) => t.join(HOLE)));
  await sql`INSERT INTO account_imports (supplier_id, external_account_number, data)
    SELECT ${supplierId}::int8, ${`${prefix}-`} || n, replace((${filled}::jsonb) ->> (n % ${templates.length}::int4), chr(1), n::text)::jsonb
    FROM generate_series(${from}::int4, ${to - 1}::int4) AS n`.execute(store.db);
}
