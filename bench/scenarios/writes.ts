import type { LoopResult } from '../baselines/raw-db.ts';
import { accountTemplates, MARK } from '../lib/account-payload.ts';
import { runLoad, type LoadResult, type LoadSpec } from '../lib/load.ts';
import { cpuSeconds, runJsonChild, type Server } from '../lib/proc.ts';
import { ratioRow } from '../lib/report.ts';
import { transactionsBody } from '../lib/transactions-payload.ts';
import { runWrk, wrkPath } from '../lib/wrk.ts';
import { log, routeExists, V1, type Ctx } from './context.ts';
import { fromLoadRound, fromLoopRound, paired, type Side } from './paired.ts';
import { stageUntimed, withDatabase } from './seed.ts';

// validate-account, staging, account creation and transactions: each the service under load
// against its baseline at the same concurrency, alternating in rounds (paired.ts).
const TEMPLATES = 50;
const RESTAGE_SET = 1000;
/**
 * Run without the staging row, create stages this many accounts per second of its load on each side:
 * about twice what the one-statement floor created in any run so far (at most about 760 a second).
 */
const CREATE_STAGED_PER_SECOND = 1500;
/** Accounts the transaction batches go to (one template each). */
const TRANSACTION_ACCOUNTS = 16;

/**
 * The service (or the echo server) under load from a separate process (autocannon, or `load`: wrk
 * for the validate row). The server's own CPU time per answer is taken too: it moves much less than
 * req/s when neighbours load the machine.
 */
export const http = (
  ctx: Ctx, server: () => Server, connections: number, source: (start: number) => LoadSpec['source'], load: (spec: LoadSpec) => Promise<LoadResult> = runLoad,
): Side =>
  async (seconds, warmupSeconds, start) => {
    const { pid, url } = server();
    const spec = { url, connections, headers: ctx.headers, source: source(start) };
    let next = start;
    if (warmupSeconds > 0) next = (await load({ ...spec, seconds: warmupSeconds, warmupSeconds: 0 })).next;
    const before = cpuSeconds(pid);
    const result = await load({ ...spec, source: source(next), seconds, warmupSeconds: 0 });
    return { ...fromLoadRound(result), cpuMs: (cpuSeconds(pid) - before) * 1000 };
  };

/** A raw baseline script in a separate process. */
export const rawBaseline = (script: string, connections: number, input: Record<string, unknown>): Side =>
  async (seconds, warmupSeconds, start) => fromLoopRound(await runJsonChild<LoopResult>(script, { ...input, connections, seconds, warmupSeconds, start }));

export async function validateAccount(ctx: Ctx): Promise<void> {
  const path = `${V1}/validate-account/`;
  const target = '≥ 50% of baseline';
  if (!(await routeExists(ctx, 'POST', path))) return notRun(ctx, 'validate-account', target, 'endpoint not built yet');
  const c = ctx.cfg.connections.validate;
  const templates = accountTemplates(ctx.factory, ctx.tenant.supplier, 'V', TEMPLATES);
  const generator = validateGenerator(ctx);
  log(`${ctx.store}: validate-account vs a bare Fastify echo, ${c} connections, ${ctx.cfg.rounds} rounds, load from ${generator.name}`);
  const source = (p: string) => (start: number) => ({ kind: 'template' as const, method: 'POST' as const, path: p, templates, start });
  const r = await paired(ctx, http(ctx, () => ctx.echo, c, source('/echo'), generator.load), http(ctx, () => ctx.server(), c, source(path), generator.load));
  const cpu = (v: number | undefined) => (v === undefined ? '?' : v.toFixed(3));
  const cores = (v: number | undefined) => (v === undefined ? '?' : `${Math.round(v * 100)}%`);
  const ratio = r.baseline.rps && r.service.rps ? `${Math.round((r.service.rps / r.baseline.rps) * 100)}%` : '?';
  const cpuNote = `${ratio} of the echo at ${cpu(r.service.cpuMsPerRequest)} server CPU ms/req against the echo's ${cpu(r.baseline.cpuMsPerRequest)}`;
  const generatorNote = `generator ${generator.name}, its CPU ${cores(r.baseline.generatorCoreShare)} of a core driving the echo, ${cores(r.service.generatorCoreShare)} driving the service`;
  log(`${ctx.store}: validate-account: ${cpuNote}; ${generatorNote}`);
  ctx.rows.push(ratioRow({
    store: ctx.store, what: 'validate-account', connections: c, service: r.service,
    baseline: { label: 'bare Fastify echo', ...r.baseline }, target,
    note: [`body ${(templates[0]!.join('1').length / 1024).toFixed(1)} KB`, cpuNote, generatorNote, generator.note].filter(Boolean).join('; '),
  }, 0.5));
}

/**
 * wrk when installed, so that the generator is not the bottleneck (bench/lib/wrk.ts); autocannon
 * when asked for (BENCH_GENERATOR=autocannon) or when wrk is missing, which the row's note says.
 */
function validateGenerator(ctx: Ctx): { name: string; load: (spec: LoadSpec) => Promise<LoadResult>; note?: string } {
  const autocannon = { name: 'autocannon (a Node process)', load: runLoad };
  if (ctx.cfg.generator === 'autocannon') return autocannon;
  if (!wrkPath()) {
    log(`${ctx.store}: wrk is not installed (apt-get install wrk): validate-account falls back to autocannon, which may be the bottleneck`);
    return { ...autocannon, note: 'wrk not installed (apt-get install wrk): autocannon, which may itself be the bottleneck' };
  }
  const threads = ctx.cfg.wrkThreads;
  return { name: `wrk, ${threads} thread${threads === 1 ? '' : 's'}`, load: (spec) => runWrk(spec, threads) };
}

export async function staging(ctx: Ctx): Promise<void> {
  const path = `${V1}/account-import-process/create-or-update/`;
  if (!(await routeExists(ctx, 'POST', path))) {
    notRun(ctx, 'stage (new)', '≥ 70% of baseline', 'endpoint not built yet');
    return notRun(ctx, 're-stage', '≥ 70% of baseline', 'endpoint not built yet');
  }
  const c = ctx.cfg.connections.staging;
  const templates = accountTemplates(ctx.factory, ctx.tenant.supplier, 'S', TEMPLATES);
  const rawInput = { target: ctx.raw, supplierId: ctx.rawTenant.supplierId, templates };
  const service = (cycle?: number) => http(ctx, () => ctx.server(), c, (start) => ({ kind: 'template', method: 'POST', path, templates, start, ...(cycle ? { cycle } : {}) }));
  log(`${ctx.store}: stage (new) vs raw INSERT … ON CONFLICT, ${c} connections`);
  const fresh = await paired(ctx, rawBaseline('bench/baselines/raw-stage.ts', c, rawInput), service());
  ctx.rows.push(ratioRow({ store: ctx.store, what: 'stage (new)', connections: c, service: fresh.service,
    baseline: { label: 'raw INSERT … ON CONFLICT', ...fresh.baseline }, target: '≥ 80% of baseline' }, 0.8));

  // Accounts [0, cycle) are re-staged; the rest (less the last few, maybe never sent) are created later.
  const sent = Math.max(0, fresh.service.next - 2 * c);
  const cycle = Math.max(1, Math.min(RESTAGE_SET, Math.floor(sent / 2)));
  ctx.staged = { prefix: 'S', from: cycle, to: sent };
  log(`${ctx.store}: re-stage of a set of ${cycle} accounts`);
  const again = await paired(ctx, rawBaseline('bench/baselines/raw-stage.ts', c, { ...rawInput, cycle }), service(cycle));
  ctx.rows.push(ratioRow({ store: ctx.store, what: 're-stage', connections: c, service: again.service,
    baseline: { label: 'raw INSERT … ON CONFLICT', ...again.baseline }, target: '≥ 80% of baseline', note: `a set of ${cycle} accounts` }, 0.8));
}

export async function createAccounts(ctx: Ctx): Promise<void> {
  const path = `${V1}/account-import-process/process/`;
  const what = 'create account';
  if (!(await routeExists(ctx, 'POST', path))) return notRun(ctx, what, '≥ 80% of the floor', 'endpoint not built yet');
  ctx.staged ??= await stageForCreate(ctx);
  const c = ctx.cfg.connections.create;
  // The service's own pending list says which were staged: a request autocannon prepared at the end
  // of a round may never have been sent, so the counters alone can name an account never staged.
  const { prefix, from } = ctx.staged;
  const res = await fetch(`${ctx.server().url}${V1}/pending-account-import-processes/${ctx.tenant.supplier}/`, { headers: ctx.headers });
  const pending = await res.json() as Array<{ external_account_number: string }>;
  const externals = pending.map((r) => r.external_account_number)
    .filter((e) => e.startsWith(`${prefix}-`) && Number(e.slice(prefix.length + 1)) >= from);
  const bodies = externals.map((external) => JSON.stringify({
    external_account_number: external, import_supplier_code: ctx.tenant.supplier, operations_team_name: ctx.tenant.team,
  }));
  // The floor: one statement an account, committing by itself (floor-create.ts). BENCH_CREATE_BASELINE=levels
  // measures the old baseline instead, BEGIN, 12 statements and COMMIT, which the service outran.
  const floor = ctx.cfg.createBaseline === 'floor';
  const baseline = floor
    ? { script: 'bench/baselines/floor-create.ts', label: 'floor: raw SQL, 1 statement/account', target: '≥ 80% of the floor; p99 reported', min: 0.8 }
    : { script: 'bench/baselines/raw-create.ts', label: 'raw SQL, 1 tx/account (not a floor)', target: '≥ 50% of baseline; p99 reported', min: 0.5 };
  log(`${ctx.store}: create account vs ${baseline.label}, ${c} concurrent, ${bodies.length} staged accounts`);
  const r = await paired(ctx,
    rawBaseline(baseline.script, c, { target: ctx.raw, supplierId: ctx.rawTenant.supplierId, teamId: ctx.rawTenant.teamId }),
    http(ctx, () => ctx.server(), c, (start) => ({ kind: 'bodies', method: 'POST', path, bodies, start })));
  ctx.created = externals.slice(0, TRANSACTION_ACCOUNTS);
  ctx.rows.push(ratioRow({ store: ctx.store, what, connections: c, service: r.service,
    baseline: { label: baseline.label, ...r.baseline }, target: baseline.target,
    note: r.service.next >= bodies.length ? 'ran out of staged accounts' : undefined }, baseline.min));
}

export async function transactions(ctx: Ctx): Promise<void> {
  const path = `${V1}/transactions/create/`;
  const what = 'transactions, batches of 500';
  if (!(await routeExists(ctx, 'POST', path))) return notRun(ctx, what, '≥ 50% of baseline', 'endpoint not built yet');
  if (ctx.created.length === 0) ctx.created = await createForTransactions(ctx);
  const c = ctx.cfg.connections.transactions;
  const marker = JSON.stringify(MARK).slice(1, -1);
  const templates = ctx.created.map((external) => JSON.stringify(transactionsBody(ctx.tenant.supplier, external, 500, MARK)).split(marker));
  log(`${ctx.store}: transactions (batches of 500 onto ${templates.length} accounts) vs raw multi-row INSERT, ${c} connections`);
  const r = await paired(ctx,
    rawBaseline('bench/baselines/raw-transactions.ts', c, { target: ctx.raw, supplierId: ctx.rawTenant.supplierId, templates }),
    http(ctx, () => ctx.server(), c, (start) => ({ kind: 'template', method: 'POST', path, templates, start })));
  ctx.rows.push(ratioRow({ store: ctx.store, what, connections: c, service: r.service,
    baseline: { label: 'raw multi-row INSERT', ...r.baseline }, target: '≥ 50% of baseline',
    note: `body ${(templates[0]!.join('1').length / 1024).toFixed(0)} KB; req/s = batches/s` }, 0.5));
}

/**
 * Create run without the staging row (BENCH_ONLY=create): both databases get the same staged
 * accounts, untimed and more than either side creates in the row's seconds, so the row measures
 * creates and not an empty list.
 */
async function stageForCreate(ctx: Ctx): Promise<NonNullable<Ctx['staged']>> {
  const count = CREATE_STAGED_PER_SECOND * (ctx.cfg.seconds + ctx.cfg.warmupSeconds);
  const templates = accountTemplates(ctx.factory, ctx.tenant.supplier, 'S', TEMPLATES);
  log(`${ctx.store}: create without the staging row: staging ${count} accounts in each database, untimed`);
  await withDatabase(ctx, 'service', (store) => stageUntimed(store, ctx.tenant.supplierId, 'S', templates, 0, count));
  await withDatabase(ctx, 'raw', (store) => stageUntimed(store, ctx.rawTenant.supplierId, 'S', templates, 0, count));
  return { prefix: 'S', from: 0, to: count };
}

/**
 * Transactions run without the create row (BENCH_ONLY=transactions): the accounts the batches go to,
 * made untimed on each side the way that row makes them (staged and created over HTTP in the service;
 * staged and created by raw-create.ts in the baselines' database, where raw-transactions.ts finds them).
 */
async function createForTransactions(ctx: Ctx): Promise<string[]> {
  const templates = accountTemplates(ctx.factory, ctx.tenant.supplier, 'T', TRANSACTION_ACCOUNTS);
  log(`${ctx.store}: transactions without the create row: creating ${TRANSACTION_ACCOUNTS} accounts on each side, untimed`);
  const externals: string[] = [];
  const post = async (path: string, body: string) => {
    const res = await fetch(`${ctx.server().url}${V1}${path}`, { method: 'POST', headers: { ...ctx.headers, 'content-type': 'application/json' }, body });
    if (!res.ok) throw new Error(`POST ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  };
  for (let n = 0; n < TRANSACTION_ACCOUNTS; n++) {
    const external = `T-${n}`;
    await post('/account-import-process/create-or-update/', templates[n]!.join(String(n)));
    await post('/account-import-process/process/', JSON.stringify({
      external_account_number: external, import_supplier_code: ctx.tenant.supplier, operations_team_name: ctx.tenant.team,
    }));
    externals.push(external);
  }
  await withDatabase(ctx, 'raw', (store) => stageUntimed(store, ctx.rawTenant.supplierId, 'T', templates, 0, TRANSACTION_ACCOUNTS));
  // raw-create.ts creates every pending account of the supplier, then stops: these, and the staging
  // row's when it ran before (BENCH_ONLY=staging,transactions), well within its time.
  const made = await runJsonChild<LoopResult>('bench/baselines/raw-create.ts',
    { target: ctx.raw, supplierId: ctx.rawTenant.supplierId, teamId: ctx.rawTenant.teamId, connections: 1, seconds: 300, warmupSeconds: 0 });
  if (made.ok < TRANSACTION_ACCOUNTS || made.failed) {
    throw new Error(`raw-create made ${made.ok} of ${TRANSACTION_ACCOUNTS} accounts${made.firstError ? `: ${made.firstError}` : ''}`);
  }
  return externals;
}

export function notRun(ctx: Ctx, what: string, target: string, note: string): void {
  log(`${ctx.store}: ${what}: not run (${note})`);
  ctx.rows.push({ store: ctx.store, what, service: {}, target, pass: null, note });
}
