import { setTimeout as sleep } from 'node:timers/promises';
import type { Store } from '../../src/db/store.ts';
import { runLoad } from '../lib/load.ts';
import { cpuSeconds, rssBytes } from '../lib/proc.ts';
import { ratioRow, resultOf, type Row } from '../lib/report.ts';
import { fromLoad, log, routeExists, V1, type Ctx } from './context.ts';
import { paired } from './paired.ts';
import { withDatabase } from './seed.ts';
import { http, notRun, rawBaseline } from './writes.ts';

// The list and status endpoints over one supplier with many accounts (half imported, half pending),
// seeded straight into the tables with generate_series: the HTTP path is what is measured here.
// Status is a ratio row: the baselines' database is seeded with the same supplier for its raw lookup.
const ID_OFFSET = 1_000_000_000;
const MB = 1024 * 1024;
const LISTS = [
  { what: 'all', path: 'all-account-import-processes', share: 1 },
  { what: 'pending', path: 'pending-account-import-processes', share: 0.5 },
  { what: 'imported', path: 'imported-account-import-processes', share: 0.5 },
] as const;

export const bigExternal = (g: number) => `BIG-${String(g).padStart(7, '0')}`;

/** The script that seeds supplier `sup` of a database with `accounts` accounts, every second one imported. */
function bigSupplierScript(sup: number, team: number, accounts: number): string {
  // FK triggers off for the bulk load only (superuser, this session): account_imports and accounts
  // point at each other, and the ids are assigned here so no UPDATE pass is needed.
  return `
    SET session_replication_role = replica;
    INSERT INTO account_imports (id, supplier_id, external_account_number, data, staged_at, updated_at, account_id)
      SELECT ${ID_OFFSET} + g, ${sup}, 'BIG-' || lpad(g::text, 7, '0'), '{}'::jsonb,
             timestamptz '2024-01-01' + g * interval '1 millisecond', timestamptz '2024-01-01' + g * interval '1 millisecond',
             CASE WHEN g % 2 = 0 THEN ${ID_OFFSET} + g END
      FROM generate_series(1, ${accounts}) g;
    INSERT INTO accounts (id, number, account_import_id, supplier_id, external_account_number, operations_team_id,
                          billing_street_address, billing_country, billing_postal_code, created_at)
      SELECT ${ID_OFFSET} + g, 'A-b' || lpad(g::text, 7, '0'), ${ID_OFFSET} + g, ${sup}, 'BIG-' || lpad(g::text, 7, '0'), ${team},
             '1 Bench Street', 'GB', 'SW1A 1AA', timestamptz '2024-06-01' + g * interval '1 millisecond'
      FROM generate_series(2, ${accounts}, 2) g;
    SET session_replication_role = DEFAULT;
    -- The triggers that keep the stats counters were off too: count the loaded rows as the migration does.
    SELECT rebuild_stats_counters();
    ANALYZE account_imports;
    ANALYZE accounts;`;
}

/**
 * Seeds supplier BIG in the service's database, and with `raw` the same rows in the baselines' own
 * (the status row's raw lookup reads them there).
 */
export async function seedBigSupplier(ctx: Ctx, accounts: number, options: { raw: boolean }): Promise<void> {
  const started = Date.now();
  const seed = (tenant: Ctx['tenant']) => async (store: Store) => {
    await store.withSession((run) => run(bigSupplierScript(tenant.bigSupplierId, tenant.teamId, accounts)));
  };
  await withDatabase(ctx, 'service', seed(ctx.tenant));
  if (options.raw) await withDatabase(ctx, 'raw', seed(ctx.rawTenant));
  log(`${ctx.store}: seeded ${accounts.toLocaleString('en-GB')} accounts${options.raw ? ' (and the same in the baselines\' database)' : ''} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

export async function lists(ctx: Ctx, accounts: number): Promise<void> {
  const base = `${V1}/all-account-import-processes/${ctx.tenant.bigSupplier}/`;
  if (!(await routeExists(ctx, 'GET', base))) {
    notRun(ctx, 'lists: whole list streamed', 'RSS growth < 100 MB', 'endpoint not built yet');
    return notRun(ctx, 'lists: keyset page of 1,000', 'p99 < 50 ms', 'endpoint not built yet');
  }
  for (const list of LISTS) {
    ctx.rows.push(await streamWholeList(ctx, list.what, `${V1}/${list.path}/${ctx.tenant.bigSupplier}/`, Math.floor(accounts * list.share), 0));
  }
  ctx.rows.push(await streamWholeList(ctx, 'all (slow client)', base, accounts, 2));
  for (const list of LISTS) ctx.rows.push(await keysetPages(ctx, list.what, `${V1}/${list.path}/${ctx.tenant.bigSupplier}/`));
}

/** Reads a whole list while sampling the service's VmRSS; `pauseMs` per 64 KiB read makes a slow client. */
async function streamWholeList(ctx: Ctx, what: string, path: string, expected: number, pauseMs: number): Promise<Row> {
  const server = ctx.server();
  log(`${ctx.store}: stream whole list ${what} (${expected.toLocaleString('en-GB')} expected)`);
  await sleep(500);
  const before = rssBytes(server.pid);
  let peak = before;
  const sampler = setInterval(() => { try { peak = Math.max(peak, rssBytes(server.pid)); } catch { /* exited */ } }, 25);
  const started = performance.now();
  let records = 0;
  let bytes = 0;
  let status: number;
  let first: number;
  try {
    const res = await fetch(`${server.url}${path}`, { headers: ctx.headers });
    status = res.status;
    first = performance.now() - started;
    let sinceLastPause = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      // Records are flat objects, so each '{' is one record.
      for (let i = 0; i < chunk.length; i++) if (chunk[i] === 0x7b) records += 1;
      sinceLastPause += chunk.length;
      if (pauseMs && sinceLastPause >= 65536) { sinceLastPause = 0; await sleep(pauseMs); }
    }
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  const growth = (peak - before) / MB;
  const complete = status === 200 && records === expected;
  return {
    store: ctx.store, what: `list ${what}: whole list streamed`, connections: 1,
    service: { rps: records / seconds, p50: first, non2xx: status === 200 ? 0 : 1, codes: { [status]: 1 } },
    target: 'RSS growth < 100 MB', pass: complete && growth < 100,
    note: `${records.toLocaleString('en-GB')} records, ${(bytes / MB).toFixed(0)} MB in ${seconds.toFixed(1)} s; RSS ${(before / MB).toFixed(0)} → ${(peak / MB).toFixed(0)} MB (+${growth.toFixed(0)} MB)${complete ? '' : `; expected ${expected}, status ${status}`}; req/s column = records/s, p50 = time to first byte`,
  };
}

async function keysetPages(ctx: Ctx, what: string, path: string): Promise<Row> {
  const server = ctx.server();
  const pages = ctx.cfg.quick ? 20 : 200;
  const paths: string[] = [];
  let next: string | undefined = `${path}?page_size=1000`;
  while (next && paths.length < pages) {
    paths.push(next);
    const res: Response = await fetch(`${server.url}${next}`, { headers: ctx.headers });
    await res.arrayBuffer();
    const link = res.headers.get('link') ?? '';
    const url = /<([^>]+)>;\s*rel="?next"?/.exec(link)?.[1];
    next = url ? (url.startsWith('http') ? new URL(url).pathname + new URL(url).search : url) : undefined;
  }
  const c = ctx.cfg.connections.pages;
  log(`${ctx.store}: keyset pages of 1,000 (${what}), ${paths.length} distinct pages, ${c} connections`);
  if (paths.length < 2) log(`${ctx.store}: no Link rel="next" on ${path}?page_size=1000: paging not implemented?`);
  const shuffled = paths.map((p) => [Math.random(), p] as const).sort((a, b) => a[0] - b[0]).map(([, p]) => p);
  const cpu = cpuSeconds(server.pid);
  const result = await runLoad({ url: server.url, connections: c, seconds: ctx.cfg.seconds, warmupSeconds: ctx.cfg.warmupSeconds,
    headers: ctx.headers, source: { kind: 'paths', method: 'GET', paths: shuffled } });
  const clean = result.non2xx === 0 && result.errors === 0 && paths.length >= 2;
  const cpuMsPerRequest = ((cpuSeconds(server.pid) - cpu) * 1000) / Math.max(1, result.ok);
  return { store: ctx.store, what: `list ${what}: keyset page of 1,000`, connections: c, service: { ...fromLoad(result), cpuMsPerRequest },
    target: 'p99 < 50 ms', pass: clean && result.latencyMs.p99 < 50, note: `${paths.length} distinct pages` };
}

/**
 * Status of random accounts of BIG against the same lookup as raw SQL (bench/baselines/raw-status.ts:
 * the service's one statement through `pg`, same accounts, same concurrency), in alternating rounds.
 */
export async function status(ctx: Ctx, accounts: number): Promise<void> {
  const what = 'status (half imported, half pending)';
  const target = '≥ 50% of the raw lookup; p99 reported';
  const prefix = `${V1}/account-transfer-status/${ctx.tenant.bigSupplier}/`;
  if (!(await routeExists(ctx, 'GET', `${prefix}${bigExternal(1)}/`))) return notRun(ctx, what, target, 'endpoint not built yet');
  const c = ctx.cfg.connections.status;
  const externals = Array.from({ length: 20_000 }, () => bigExternal(1 + Math.floor(Math.random() * accounts)));
  const paths = externals.map((external) => `${prefix}${external}/`);
  log(`${ctx.store}: status at ${accounts.toLocaleString('en-GB')} accounts vs the raw lookup, ${c} connections, ${ctx.cfg.rounds} rounds`);
  const r = await paired(ctx,
    rawBaseline('bench/baselines/raw-status.ts', c, { target: ctx.raw, supplier: ctx.rawTenant.bigSupplier, externals }),
    http(ctx, () => ctx.server(), c, () => ({ kind: 'paths', method: 'GET', paths })));
  const row = ratioRow({
    store: ctx.store, what, connections: c, service: r.service,
    baseline: { label: 'raw lookup, same SQL', ...r.baseline }, target, note: `${accounts.toLocaleString('en-GB')} accounts`,
  }, 0.5);
  // The latencies of a failed row are not a measurement either (report.ts prints none): only a sound row gets them.
  const ms = (v: number | undefined) => (v ?? 0).toFixed(1);
  if (resultOf(row) !== 'FAILED') row.note += `; p99 ${ms(r.service.p99)} ms (raw lookup ${ms(r.baseline.p99)} ms); closed loop, so p50 ≈ ${c} / req/s`;
  ctx.rows.push(row);
}
