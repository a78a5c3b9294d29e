import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/db/schema.ts';
import * as webhooks from '../../src/modules/webhooks/webhooks.service.ts';
import { accountTemplates } from '../lib/account-payload.ts';
import { cpuSeconds, startServer, type Server } from '../lib/proc.ts';
import { ratioRow, type Row } from '../lib/report.ts';
import { log, routeExists, V1, type Ctx } from './context.ts';
import { paired, type Side } from './paired.ts';
import { http, notRun } from './writes.ts';

// The cost of events (D13): staging and create throughput with a webhook endpoint configured for the
// organisation (every event fanned out and delivered to a local receiver answering 200) against the
// same service with none, alternating in rounds as every ratio row does. Events are written either
// way; what the endpoint adds is the fan-out trigger's work in each event-writing statement (the
// database's), the fan-out and the deliveries. After each round with the endpoint, the bench waits until the receiver has stopped
// getting deliveries, and the service CPU spent meanwhile is added to that round's.
const TEMPLATES = 50;
const ORGANISATION = 'bench-org';
const STAGE = `${V1}/account-import-process/create-or-update/`;
const CREATE = `${V1}/account-import-process/process/`;
const QUIET_MS = 2000;
const DRAIN_LIMIT_MS = 180_000;
/** Staged accounts each create side has at least: this many per second of its load (warm-up included). */
const TOPUP_PER_SECOND = 200;
const TOPUP_FROM = 1_000_000;

/**
 * Per side with the endpoint: deliveries received, requests measured, and, over each whole round
 * (warm-up, load and drain), the service's CPU and every request answered, for the cost of a delivery.
 */
interface Delivery { deliveries: number; measured: number; drainSeconds: number; windowCpuMs: number; windowRequests: number }
const newDelivery = (): Delivery => ({ deliveries: 0, measured: 0, drainSeconds: 0, windowCpuMs: 0, windowRequests: 0 });
/** The service's own CPU per delivered event may be at most this (issue #29). */
const DELIVERY_CPU_MS = 0.15;

export async function eventsCost(ctx: Ctx): Promise<void> {
  const target = '≥ 90% of the no-webhook run';
  if (!(await routeExists(ctx, 'POST', STAGE)) || !(await routeExists(ctx, 'POST', CREATE))) {
    notRun(ctx, 'stage (new), webhooks on vs off', target, 'endpoint not built yet');
    return notRun(ctx, 'create account, webhooks on vs off', target, 'endpoint not built yet');
  }
  const receiver = await startServer({ name: 'webhook-receiver', script: 'bench/baselines/webhook-receiver.ts', env: {}, logDir: ctx.logDir });
  let endpoint: string | undefined;
  /** Events after this id were recorded with the endpoint in place: each is one delivery. */
  let eventsFrom = 0;
  // PostgreSQL: the bench reads how many events there are to deliver, and waits for every one.
  const expected = ctx.target.raw.kind === 'postgres' ? eventsAfter(ctx.target.raw.url) : undefined;
  const withDb = async (work: (db: Kysely<Database>) => Promise<void>) => {
    const run = async () => {
      const store = await ctx.target.open();
      try { await work(store.db); } finally { await store.close(); }
    };
    // PGlite belongs to one process: the service stops while its endpoint is added or removed.
    if (ctx.store === 'pglite') await ctx.restart(run);
    else await run();
  };
  const setWebhook = async (on: boolean) => {
    if (on === (endpoint !== undefined)) return;
    await withDb(async (db) => {
      if (on) {
        endpoint = (await webhooks.createWebhook(db, ORGANISATION, `${receiver.url}/hook`)).webhook;
        eventsFrom = Number((await sql<{ id: string }>`SELECT coalesce(max(id), 0) AS id FROM events`.execute(db)).rows[0]!.id);
      }
      else { await webhooks.deleteWebhook(db, endpoint!); endpoint = undefined; }
    });
  };
  try {
    const c = ctx.cfg.connections.staging;
    const off = accountTemplates(ctx.factory, ctx.tenant.supplier, 'E0', TEMPLATES);
    const on = accountTemplates(ctx.factory, ctx.tenant.supplier, 'E1', TEMPLATES);
    const stage = (templates: string[][]) => http(ctx, () => ctx.server(), c, (start) => ({ kind: 'template', method: 'POST', path: STAGE, templates, start }));
    log(`${ctx.store}: stage (new) with a webhook endpoint vs without, ${c} connections, ${ctx.cfg.rounds} rounds`);
    const stageStats = newDelivery();
    const s = await paired(ctx, toggled(false, stage(off)), toggled(true, stage(on), stageStats));
    ctx.rows.push(eventsRow(ctx, 'stage (new), webhooks on vs off', c, s, stageStats, target));
    ctx.rows.push(deliveryCostRow(ctx, 'stage (new)', s, stageStats));

    // Create the accounts each side staged: those of E0 without the endpoint, those of E1 with it.
    const res = await fetch(`${ctx.server().url}${V1}/pending-account-import-processes/${ctx.tenant.supplier}/`, { headers: ctx.headers });
    const pending = (await res.json() as Array<{ external_account_number: string }>).map((r) => r.external_account_number);
    const bodies = (prefix: string) => pending.filter((e) => e.startsWith(`${prefix}-`)).map((external) => JSON.stringify({
      external_account_number: external, import_supplier_code: ctx.tenant.supplier, operations_team_name: ctx.tenant.team,
    }));
    const cc = ctx.cfg.connections.create;
    const create = (list: string[]) => http(ctx, () => ctx.server(), cc, (start) => ({ kind: 'bodies', method: 'POST', path: CREATE, bodies: list, start }));
    // Each side needs a new staged account per request: under a heavy load staging makes fewer than
    // create uses, so both sets are topped up, untimed, with the same account data inserted straight
    // into account_imports (what staging stores; no event).
    const need = TOPUP_PER_SECOND * (ctx.cfg.seconds + ctx.cfg.warmupSeconds);
    const topped = { E0: 0, E1: 0 };
    await withDb(async (db) => {
      for (const [prefix, templates] of [['E0', off], ['E1', on]] as const) {
        const have = pending.filter((e) => e.startsWith(`${prefix}-`)).length;
        for (let n = TOPUP_FROM; n < TOPUP_FROM + need - have; n += 200) {
          const rows = Array.from({ length: Math.min(200, TOPUP_FROM + need - have - n) }, (_, i) => {
            const data = templates[(n + i) % templates.length]!.join(String(n + i));
            return sql`(${ctx.tenant.supplierId}, ${`${prefix}-${n + i}`}, ${data}::jsonb)`;
          });
          await sql`INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES ${sql.join(rows)}`.execute(db);
          topped[prefix] += rows.length;
          pending.push(...rows.map((_, i) => `${prefix}-${n + i}`));
        }
      }
    });
    const [offBodies, onBodies] = [bodies('E0'), bodies('E1')];
    log(`${ctx.store}: create account with a webhook endpoint vs without, ${cc} connections, ${offBodies.length}/${onBodies.length} staged accounts`);
    const createStats = newDelivery();
    const r = await paired(ctx, toggled(false, create(offBodies)), toggled(true, create(onBodies), createStats));
    const ranOut = r.baseline.next >= offBodies.length || r.service.next >= onBodies.length;
    const extra = [topped.E0 + topped.E1 ? `staged accounts topped up by ${topped.E0}/${topped.E1} raw INSERTs` : '', ranOut ? 'ran out of staged accounts' : ''];
    ctx.rows.push(eventsRow(ctx, 'create account, webhooks on vs off', cc, r, createStats, target, extra.filter(Boolean).join('; ') || undefined));
    ctx.rows.push(deliveryCostRow(ctx, 'create account', r, createStats));
  } finally {
    await setWebhook(false).catch((error: Error) => log(`${ctx.store}: could not remove the bench webhook: ${error.message}`));
    await receiver.stop();
  }

  function toggled(wanted: boolean, side: Side, stats?: Delivery): Side {
    return async (seconds, warmupSeconds, start) => {
      await setWebhook(wanted);
      if (!(wanted && stats)) return side(seconds, warmupSeconds, start);
      // With the endpoint, the warm-up is a run of its own, so that the requests it made (and their
      // deliveries, which come in later) are counted in the window the service's CPU is read over.
      const pid = ctx.server().pid;
      const windowStart = cpuSeconds(pid);
      const before = await received(receiver);
      const warm = warmupSeconds > 0 ? await side(warmupSeconds, 0, start) : undefined;
      const round = await side(seconds, 0, warm?.next ?? start);
      const cpu = cpuSeconds(pid);
      const target = expected ? before + await expected(eventsFrom) : undefined;
      stats.drainSeconds = Math.max(stats.drainSeconds, await drain(receiver, target));
      const end = cpuSeconds(pid);
      round.cpuMs = (round.cpuMs ?? 0) + (end - cpu) * 1000;
      stats.deliveries += (await received(receiver)) - before;
      stats.measured += round.ok;
      stats.windowCpuMs += (end - windowStart) * 1000;
      stats.windowRequests += (warm?.ok ?? 0) + round.ok;
      return round;
    };
  }
}

async function received(receiver: Server): Promise<number> {
  const res = await fetch(`${receiver.url}/count`);
  return (await res.json() as { received: number }).received;
}

/** PostgreSQL: the number of events recorded after an id (the service keeps running meanwhile). */
function eventsAfter(url: string): (id: number) => Promise<number> {
  return async (id) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM events WHERE id > $1', [id])).rows[0]!.n);
    } finally {
      await client.end();
    }
  };
}

/**
 * Waits until the receiver has `target` deliveries (when known) and then none for QUIET_MS; the
 * seconds until its last one.
 */
async function drain(receiver: Server, target?: number): Promise<number> {
  const started = performance.now();
  let last = await received(receiver);
  let lastChange = started;
  while ((last < (target ?? 0) || performance.now() - lastChange < QUIET_MS) && performance.now() - started < DRAIN_LIMIT_MS) {
    await sleep(100);
    const now = await received(receiver);
    if (now !== last) { last = now; lastChange = performance.now(); }
  }
  return (lastChange - started) / 1000;
}

function eventsRow(ctx: Ctx, what: string, connections: number, r: Awaited<ReturnType<typeof paired>>, stats: Delivery, target: string, extra?: string): Row {
  const row = ratioRow({
    store: ctx.store, what, connections, service: r.service,
    baseline: { label: 'the same, no webhook', ...r.baseline }, target,
    note: [`${stats.deliveries.toLocaleString('en-GB')} deliveries received for ${stats.measured.toLocaleString('en-GB')} measured requests (+ warm-up)`,
      `deliveries went on ${stats.drainSeconds.toFixed(1)} s after the load (CPU ms/req includes it)`, extra].filter(Boolean).join('; '),
  }, 0.9);
  // The no-webhook side failing makes the row FAILED (report.ts); a webhook that delivered nothing is a miss.
  if (stats.deliveries === 0) return { ...row, pass: false, note: `${row.note}; no delivery reached the receiver` };
  return row;
}

/**
 * The service's own CPU per delivered event (the receiver is another process): over each round with
 * the endpoint, from its warm-up to its last delivery, the service's CPU less what the same requests
 * cost without an endpoint (that side's CPU ms per request), over the deliveries received. So it is
 * what the endpoint adds, the fan-out trigger in each writing transaction included, per delivery.
 */
function deliveryCostRow(ctx: Ctx, what: string, r: Awaited<ReturnType<typeof paired>>, stats: Delivery): Row {
  const off = r.baseline.cpuMsPerRequest;
  const perEvent = off === undefined || stats.deliveries === 0 ? undefined : (stats.windowCpuMs - off * stats.windowRequests) / stats.deliveries;
  const ms = (v: number | undefined) => (v === undefined ? '?' : v.toFixed(3));
  const n = (v: number) => Math.round(v).toLocaleString('en-GB');
  const note = [`(${n(stats.windowCpuMs)} ms of service CPU over ${n(stats.windowRequests)} requests with the endpoint, warm-up to last delivery,`
    + ` − ${ms(off)} ms × ${n(stats.windowRequests)}, their cost without one) / ${n(stats.deliveries)} deliveries`,
  `${(stats.deliveries / Math.max(1, stats.windowRequests)).toFixed(2)} events a request`,
  `all of the service's CPU over the deliveries: ${ms(stats.deliveries ? stats.windowCpuMs / stats.deliveries : undefined)} ms`].join('; ');
  log(`${ctx.store}: ${what}: ${ms(perEvent)} service CPU ms per delivered event ${note}`);
  const failed = { non2xx: (r.service.non2xx ?? 0) + (r.baseline.non2xx ?? 0), errors: (r.service.errors ?? 0) + (r.baseline.errors ?? 0),
    codes: sumCodes(r.baseline.codes, r.service.codes), firstError: r.service.firstError ?? r.baseline.firstError };
  return {
    store: ctx.store, what: `${what}, webhooks: the service's CPU ms per delivered event (CPU ms column)`, service: { cpuMsPerRequest: perEvent, ...failed },
    target: `≤ ${DELIVERY_CPU_MS} ms`, pass: perEvent === undefined ? false : perEvent <= DELIVERY_CPU_MS, note,
  };
}

function sumCodes(...all: Array<Record<string, number> | undefined>): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const codes of all) for (const [code, n] of Object.entries(codes ?? {})) sum[code] = (sum[code] ?? 0) + n;
  return sum;
}
