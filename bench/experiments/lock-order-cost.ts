import pg from 'pg';
import { dropDatabases, freshTarget, provision } from '../lib/setup.ts';

// The stats counters' lock order (migration 023: the hourly counter takes the state counter's row
// first) against the function it replaced, as SQL and as plpgsql: chunk-shaped transactions
// (50 stagings, 50 accounts, 50 links) and single creates, in one session, timed, the versions
// alternating three times. The tables grow as it runs, so compare within a round.
//
// Usage: node --import tsx bench/experiments/lock-order-cost.ts

const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `lock_order_${process.pid}`;
const target = await freshTarget('postgres', adminUrl, name);
const tenant = await provision(target);
const client = new pg.Client({ connectionString: target.env.DATABASE_URL });
await client.connect();
const OLD = `CREATE OR REPLACE FUNCTION accounts_created_per_hour_add(p_supplier bigint, p_at timestamptz, p_created int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO accounts_created_per_hour AS c (supplier_id, hour, shard, created)
  VALUES (p_supplier, floor(extract(epoch FROM p_at) / 3600)::bigint, stats_counter_shard(), p_created)
  ON CONFLICT (supplier_id, hour, shard) DO UPDATE SET created = c.created + excluded.created;
END $$`;
const OLD_SQL = `CREATE OR REPLACE FUNCTION accounts_created_per_hour_add(p_supplier bigint, p_at timestamptz, p_created int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO accounts_created_per_hour AS c (supplier_id, hour, shard, created)
  VALUES (p_supplier, floor(extract(epoch FROM p_at) / 3600)::bigint, stats_counter_shard(), p_created)
  ON CONFLICT (supplier_id, hour, shard) DO UPDATE SET created = c.created + excluded.created
$$`;
const NEW = (await client.query(`SELECT pg_get_functiondef('accounts_created_per_hour_add'::regproc) AS d`)).rows[0].d;
let n = 0;
async function chunks(count: number, size: number, single: boolean): Promise<number> {
  const started = performance.now();
  for (let c = 0; c < count; c += 1) {
    const from = n; n += size;
    const ids = Array.from({ length: size }, (_, i) => `LO-${from + i}`);
    const run = async (batch: string[]) => {
      await client.query('BEGIN');
      await client.query(`INSERT INTO account_imports (supplier_id, external_account_number, data) SELECT $1, e, '{}' FROM unnest($2::text[]) e`, [tenant.supplierId, batch]);
      await client.query(`INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number, operations_team_id, billing_street_address, billing_country, billing_postal_code)
        SELECT 'A-' || i.id, i.id, i.supplier_id, i.external_account_number, $3, '1 Road', 'GB', 'BS1 5TY' FROM account_imports i WHERE i.supplier_id = $1 AND i.external_account_number = ANY($2)`, [tenant.supplierId, batch, tenant.teamId]);
      await client.query(`UPDATE account_imports i SET account_id = a.id FROM accounts a WHERE a.account_import_id = i.id AND i.supplier_id = $1 AND i.external_account_number = ANY($2)`, [tenant.supplierId, batch]);
      await client.query('COMMIT');
    };
    if (single) for (const e of ids) await run([e]); else await run(ids);
  }
  return (performance.now() - started) / (count * size);
}
const versions: Array<[string, string]> = [['old (sql)', OLD_SQL], ['old (plpgsql)', OLD], ['new', NEW]];
for (let round = 0; round < 3; round += 1) {
  for (const [label, def] of versions) {
    await client.query(def);
    await chunks(5, 50, false);
    const chunk = await chunks(40, 50, false);
    const single = await chunks(1, 400, true);
    console.log(`${label.padEnd(14)} chunk of 50: ${chunk.toFixed(3)} ms an account; one at a time: ${single.toFixed(3)} ms an account`);
  }
}
await client.end();
await dropDatabases(adminUrl, [name]);
