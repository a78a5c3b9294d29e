import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { loadBenchConfig, type BenchStore } from './config.ts';
import { loadPayloadFactory } from './lib/account-payload.ts';
import { ROOT, startServer, type Server } from './lib/proc.ts';
import { markdownTable, resultOf, type Row } from './lib/report.ts';
import { dropDatabases, freshTarget, provision, serviceEnv } from './lib/setup.ts';
import { log, type Ctx } from './scenarios/context.ts';
import { lists, seedBigSupplier, status } from './scenarios/reads.ts';
import { seedStatsSupplier, statsAtScale } from './scenarios/stats.ts';
import { eventsCost } from './scenarios/events.ts';
import { convertExport } from './scenarios/convert.ts';
import { reconcileAtScale } from './scenarios/reconcile.ts';
import { migrationJob, preflight, uploadMemory } from './scenarios/jobs.ts';
import { createAccounts, staging, transactions, validateAccount } from './scenarios/writes.ts';

// `npm run bench`: for each store, a fresh database, the service and a bare echo server as separate
// processes, then every row against its baseline measured in the same run. Prints the table and
// writes docs/performance.md (BENCH_QUICK=1 writes .bench-data/performance-quick.md instead, and a
// BENCH_ONLY run .bench-data/performance-<rows>.md).
const cfg = loadBenchConfig();
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const workDir = join(ROOT, '.bench-data', stamp);
mkdirSync(workDir, { recursive: true });
const profileDir = cfg.cpuProfile ? join(workDir, 'profiles') : undefined;
const { factory, source: payloadSource } = await loadPayloadFactory();
const rows: Row[] = [];
const wants = (name: string) => !cfg.only || cfg.only.has(name);
const started = Date.now();

// The convert row is the client alone (no service, no store): it runs once, before the stores.
if (wants('convert')) {
  await convertExport(cfg, workDir, rows).catch((error: Error) => {
    log(`convert failed: ${error.stack ?? error.message}`);
    rows.push({ store: 'client', what: 'convert', service: {}, target: '', pass: false, aborted: error.message.split('\n')[0] });
  });
}
const storeRows = ['validate', 'staging', 'create', 'transactions', 'events', 'jobs', 'preflight', 'upload', 'lists', 'status', 'stats', 'reconcile'];
for (const store of storeRows.some(wants) ? cfg.stores : []) {
  await runStore(store).catch((error: Error) => {
    log(`${store}: run failed: ${error.stack ?? error.message}`);
    rows.push({ store, what: 'run', service: {}, target: '', pass: false, aborted: error.message.split('\n')[0] });
  });
}

async function runStore(store: BenchStore): Promise<void> {
  const name = `bench_${stamp}_${store === 'postgres' ? 'pg' : 'lite'}`;
  const target = await freshTarget(store, cfg.adminUrl, name);
  const raw = await freshTarget(store, cfg.adminUrl, `${name}_raw`);
  log(`${store}: provisioning ${JSON.stringify(target.env)}`);
  const tenant = await provision(target);
  const rawTenant = await provision(raw);
  // The events row delivers webhooks to a receiver on loopback; the flag only lifts the SSRF refusal.
  const env = { ...serviceEnv(target, cfg.logLevel), WORKER_CONCURRENCY: String(cfg.jobWorkers), JOB_CHUNK_RECORDS: String(cfg.jobChunk), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
  const startService = () => startServer({ name: `service-${store}`, script: 'src/main.ts', env, logDir: workDir, cpuProfileDir: profileDir, readyPath: '/readyz' });
  let server: Server = await startService();
  // An echo that cannot start must not leave the service running: this process would wait on it for ever.
  const echo = await startServer({ name: 'echo', script: 'bench/baselines/echo-server.ts', env: {}, logDir: workDir })
    .catch(async (error: Error) => { await server.stop(); throw error; });
  log(`${store}: service pid ${server.pid} at ${server.url}; echo pid ${echo.pid}`);
  const ctx: Ctx = {
    cfg, store, target, tenant, raw: raw.raw, rawTarget: raw, rawTenant, factory, echo, logDir: workDir, rows, staged: undefined, created: [],
    headers: { authorization: `Token ${tenant.token}` },
    server: () => server,
    async restart(work) {
      await server.stop();
      await work();
      server = await startService();
    },
  };
  // A step runs when any of its rows is wanted: data that several rows read is seeded once, by the
  // first of them, and still when only the second is run. A step that throws is a FAILED row.
  const step = async (names: string | string[], what: string, work: () => Promise<void>) => {
    if (![names].flat().some(wants)) return;
    try { await work(); } catch (error) {
      log(`${store}: ${what} failed: ${(error as Error).stack}`);
      rows.push({ store, what, service: {}, target: '', pass: false, aborted: (error as Error).message.split('\n')[0] });
    }
  };
  try {
    await step('validate', 'validate-account', () => validateAccount(ctx));
    await step('staging', 'staging', () => staging(ctx));
    await step('create', 'create account', () => createAccounts(ctx));
    await step('transactions', 'transactions', () => transactions(ctx));
    await step('events', 'events: webhooks on vs off', () => eventsCost(ctx));
    await step('jobs', 'migration job', () => migrationJob(ctx));
    await step('preflight', 'pre-flight', () => preflight(ctx));
    await step('upload', 'migration job upload', () => uploadMemory(ctx));
    if (wants('lists') || wants('status')) {
      const accounts = cfg.accounts[store];
      // The status row's baseline reads the same supplier from its own database: seeded only when it runs.
      await step(['lists', 'status'], 'seed', () => seedBigSupplier(ctx, accounts, { raw: wants('status') }));
      await step('lists', 'lists', () => lists(ctx, accounts));
      await step('status', 'status', () => status(ctx, accounts));
    }
    if (wants('stats')) {
      const accounts = cfg.accounts[store];
      await step('stats', 'stats: seed', () => seedStatsSupplier(ctx, accounts));
      await step('stats', `stats at ${accounts.toLocaleString('en-GB')} accounts, with a job running`, () => statsAtScale(ctx, accounts));
    }
    await step('reconcile', 'reconciliation', () => reconcileAtScale(ctx, cfg.reconcileRecords));
  } finally {
    await server.stop();
    await echo.stop();
    if (process.env.BENCH_KEEP !== '1') {
      if (store === 'postgres') await dropDatabases(cfg.adminUrl, [name, `${name}_raw`]);
      for (const t of [target, raw]) if (t.env.DATA_DIR) rmSync(t.env.DATA_DIR, { recursive: true, force: true });
    }
  }
}

const sh = (cmd: string, args: string[]) => { try { return execFileSync(cmd, args, { encoding: 'utf8' }).trimEnd(); } catch { return '?'; } };
const command = `${Object.entries(process.env).filter(([k]) => k.startsWith('BENCH_')).map(([k, v]) => `${k}=${v} `).join('')}npm run bench`;
const machine = [
  `- CPU: ${sh('nproc', [])} cores (\`nproc\`), ${cpus()[0]?.model ?? '?'}`,
  `- Memory (\`free -m\`):\n\n\`\`\`\n${sh('free', ['-m'])}\n\`\`\``,
  `- Node ${process.version}; ${sh('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-Atc', 'select version()']).split(' on ')[0]}; PGlite ${JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version}`,
].join('\n');
const table = markdownTable(rows);
const minutes = ((Date.now() - started) / 60000).toFixed(1);
const findingsFile = join(ROOT, 'bench/findings.md');
const findings = existsSync(findingsFile) ? readFileSync(findingsFile, 'utf8').trim() : '';
const methodFile = join(ROOT, 'bench/method.md');
const method = existsSync(methodFile) ? readFileSync(methodFile, 'utf8').trim() : '';

const doc = `# Performance

Generated by \`npm run bench\` (bench/run.ts); the method and the findings come from bench/method.md
and bench/findings.md. Every ratio compares the service with a baseline measured in the same run on
the same machine, so it means something on any machine; absolute figures are given beside it.

- Command: \`${command}\`
- Date: ${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC; run took ${minutes} min
- Seconds per measured row: ${cfg.seconds} (after ${cfg.warmupSeconds} s of warm-up); accounts behind the list and status rows: ${cfg.stores.map((s) => `${s} ${cfg.accounts[s].toLocaleString('en-GB')}`).join(', ')}
- Migration job rows: ${cfg.jobRecords.toLocaleString('en-GB')} records a job, ${cfg.uploadRecords.toLocaleString('en-GB')} records uploaded, ${cfg.jobWorkers} workers
- Convert row: a legacy export of ${cfg.convertAccounts.toLocaleString('en-GB')} accounts, ${cfg.convertTransactions} transactions each
- Account payloads: ${payloadSource}
${machine}

## Results

${table}

${method}

${findings}
`;
process.stdout.write(`\n${table}\n\n`);
// A quick run, or one of some rows only (BENCH_ONLY), is not the full picture: it never replaces docs/performance.md.
const out = cfg.quick ? join(ROOT, '.bench-data/performance-quick.md')
  : cfg.only ? join(ROOT, `.bench-data/performance-${[...cfg.only].join('-')}.md`) : join(ROOT, 'docs/performance.md');
if (cfg.writeDoc) {
  writeFileSync(out, doc);
  log(`wrote ${out} (${minutes} min)`);
}
const count = (result: string) => rows.filter((r) => resultOf(r) === result).length;
log(`${count('PASS')} pass, ${count('MISS')} miss, ${count('FAILED')} failed, ${count('NOT RUN')} not run`);
// A MISS is a finding; a FAILED row is a broken measurement, which a script running the bench must notice.
if (count('FAILED') > 0) process.exitCode = 1;
