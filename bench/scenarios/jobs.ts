import { setTimeout as sleep } from 'node:timers/promises';
import type { LoopResult } from '../baselines/raw-db.ts';
import { accountTemplates } from '../lib/account-payload.ts';
import { JOB_NOTES, JOB_TRANSACTIONS, jobRecordLine, minimalRecordLine } from '../lib/job-records.ts';
import { uploadNdjson } from '../lib/ndjson-upload.ts';
import { cpuSeconds, rssBytes, runJsonChild } from '../lib/proc.ts';
import type { Row } from '../lib/report.ts';
import { log, routeExists, V1, type Ctx } from './context.ts';
import { notRun } from './writes.ts';

// Migration jobs (D11): a job of full records run by the service's own workers against raw SQL
// writing the same rows, and a large upload of minimal records while the service's RSS is sampled.
const MB = 1024 * 1024;
const JOBS = `${V1}/migration-jobs/`;
const TEMPLATES = 50;
/** Records a second, upload included, that move 1,000,000 records in 20 minutes. */
const MILLION_RATE = Math.ceil(1_000_000 / 1200);

interface JobView { id: string; state: string; counts: Record<string, number>; errors_by_code: Array<{ code: string; count: number }> }

async function api<T>(ctx: Ctx, method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${ctx.server().url}${path}`, {
    method, headers: { ...ctx.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json().catch(() => ({})) as T };
}

async function createJob(ctx: Ctx): Promise<string> {
  const res = await api<JobView>(ctx, 'POST', JOBS, { import_supplier: ctx.tenant.supplier, operations_team_name: ctx.tenant.team });
  if (res.status !== 201) throw new Error(`POST migration-jobs/ answered ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json.id;
}

function upload(ctx: Ctx, id: string, count: number, line: (n: number) => string) {
  return uploadNdjson(`${ctx.server().url}${JOBS}${id}/records/`, ctx.headers, count, line);
}

/** Full records a request: about 930 MB, under an upload's 1 GiB body limit. */
const UPLOAD_PART = 100_000;

/**
 * `count` records uploaded as a migration team would send a book bigger than one request takes: in
 * parts of UPLOAD_PART records, one after the other, each appended to the job. The figures are summed;
 * the body is the last part's answer, and `received` the records all parts took.
 */
async function uploadInParts(ctx: Ctx, id: string, count: number, line: (n: number) => string) {
  let total = { status: 200, body: '', seconds: 0, bytes: 0, lines: 0, received: 0 };
  for (let first = 0; first < count && total.status === 200; first += UPLOAD_PART) {
    const part = Math.min(UPLOAD_PART, count - first);
    if (count > UPLOAD_PART) log(`${ctx.store}: migration job: upload part ${first / UPLOAD_PART + 1} of ${Math.ceil(count / UPLOAD_PART)}`);
    const sent = await upload(ctx, id, part, (n) => line(first + n));
    const received = sent.status === 200 ? (JSON.parse(sent.body) as { received: number }).received : 0;
    total = { status: sent.status, body: sent.body, seconds: total.seconds + sent.seconds, bytes: total.bytes + sent.bytes,
      lines: total.lines + sent.lines, received: total.received + received };
  }
  return total;
}

export async function migrationJob(ctx: Ctx): Promise<void> {
  const records = ctx.cfg.jobRecords;
  const what = `migration job: ${records.toLocaleString('en-GB')} records (account, 1 statement, ${JOB_TRANSACTIONS} transactions, ${JOB_NOTES} notes)`;
  const target = '≥ 50% of baseline';
  if (!(await routeExists(ctx, 'POST', JOBS))) return notRun(ctx, what, target, 'endpoint not built yet');
  const templates = accountTemplates(ctx.factory, ctx.tenant.supplier, 'J', TEMPLATES);
  const workers = ctx.cfg.jobWorkers;

  // The floor: raw SQL writing the same rows in sets, chunks of the service's chunk size. Beside it,
  // the earlier baseline (a record at a time, three transactions each), for the record.
  if (ctx.cfg.jobFloor) log(`${ctx.store}: migration job floor: raw SQL writing the same rows in chunks of ${ctx.cfg.jobChunk} for ${records} records, ${workers} concurrent`);
  const base = ctx.cfg.jobFloor ? await runJsonChild<LoopResult & { cpuMs: number }>('bench/baselines/raw-job-sets.ts', {
    target: ctx.raw, supplierId: ctx.rawTenant.supplierId, teamId: ctx.rawTenant.teamId, templates, records, connections: workers, chunk: ctx.cfg.jobChunk,
  }) : undefined;
  const perRecordRecords = Math.min(records, ctx.cfg.jobPerRecordBaseline);
  log(`${ctx.store}: migration job per-record baseline: raw SQL, a record at a time, ${perRecordRecords} records, ${workers} concurrent`);
  const perRecord = perRecordRecords > 0 ? await runJsonChild<LoopResult & { cpuMs: number }>('bench/baselines/raw-job.ts', {
    target: ctx.raw, supplierId: ctx.rawTenant.supplierId, teamId: ctx.rawTenant.teamId, templates: accountTemplates(ctx.factory, ctx.tenant.supplier, 'K', TEMPLATES),
    records: perRecordRecords, connections: workers,
  }) : undefined;

  log(`${ctx.store}: migration job: upload ${records} records`);
  const id = await createJob(ctx);
  const sent = await uploadInParts(ctx, id, records, (n) => jobRecordLine(templates, n));
  if (sent.status !== 200 || sent.received !== records) {
    throw new Error(`upload answered ${sent.status} (${sent.received} of ${records} received): ${sent.body.slice(0, 300)}`);
  }
  const pid = ctx.server().pid;
  const cpu = cpuSeconds(pid);
  const started = performance.now();
  const start = await api<JobView>(ctx, 'POST', `${JOBS}${id}/start/`, {});
  if (start.status !== 200) throw new Error(`start answered ${start.status}: ${JSON.stringify(start.json).slice(0, 300)}`);
  log(`${ctx.store}: migration job ${id} started (${workers} workers)`);
  const limitSeconds = Math.max(900, records / 2);
  const deadline = Date.now() + limitSeconds * 1000;
  let job = start.json;
  let lastLog = Date.now();
  let timedOut = false;
  while (job.state !== 'completed' && job.state !== 'cancelled') {
    if (Date.now() > deadline) {
      // Measured so far, and stopped so that it does not weigh on the rows after it.
      timedOut = true;
      job = (await api<JobView>(ctx, 'GET', `${JOBS}${id}/`)).json;
      await api(ctx, 'POST', `${JOBS}${id}/cancel/`);
      break;
    }
    // A job's view reads its records finished in the last minutes and its failures; on PGlite (one
    // session) every look holds the workers back, so a big job is looked at less often.
    await sleep(Math.max(500, records / 20));
    job = (await api<JobView>(ctx, 'GET', `${JOBS}${id}/`)).json;
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`${ctx.store}: migration job ${job.state}: ${JSON.stringify(job.counts)}`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = (cpuSeconds(pid) - cpu) * 1000;
  const succeeded = job.counts.succeeded ?? 0;
  const failed = timedOut ? 0 : records - succeeded;
  let why = '';
  if (failed > 0) {
    const res = await fetch(`${ctx.server().url}${JOBS}${id}/records/?outcome=failed`, { headers: ctx.headers });
    why = `; first failure: ${(await res.text()).split('\n')[0]?.slice(0, 300)}`;
  }
  log(`${ctx.store}: migration job ${job.state} in ${seconds.toFixed(1)} s: ${JSON.stringify(job.counts)}${why}`);
  const rps = succeeded / seconds;
  const ratio = base && base.rps > 0 ? rps / base.rps : undefined;
  const clean = !timedOut && failed === 0 && job.state === 'completed' && (base?.failed ?? 0) === 0;
  ctx.rows.push({
    store: ctx.store, what, connections: workers,
    service: { rps, cpuMsPerRequest: cpuMs / Math.max(1, succeeded), non2xx: failed, codes: failed ? Object.fromEntries(job.errors_by_code.map((e) => [e.code, e.count])) : {} },
    baseline: base
      ? { label: 'raw SQL, same rows in sets', rps: base.rps, p50: base.latencyMs.p50, p99: base.latencyMs.p99, errors: base.failed, firstError: base.firstError,
        cpuMsPerRequest: base.cpuMs / Math.max(1, base.ok) }
      : undefined,
    // Without its floor, the row holds the job to the million's own target: the whole book, upload
    // included, at the rate that moves a million records in 20 minutes.
    ratio, target: base ? target : `end to end ≥ ${MILLION_RATE} records/s (a million in 20 min)`,
    pass: base ? ratio !== undefined && clean && ratio >= 0.5 : clean && records / (seconds + sent.seconds) >= MILLION_RATE,
    note: `req/s = records/s from start to completed (${seconds.toFixed(1)} s), CPU ms/req = service CPU per record (baseline: its client's); upload ${(records / sent.seconds).toFixed(0)} records/s, `
      + `${(sent.bytes / MB).toFixed(0)} MB in ${sent.seconds.toFixed(1)} s; end to end with the upload ${(seconds + sent.seconds).toFixed(1)} s; ${workers} workers (WORKER_CONCURRENCY), `
      + `${base ? `floor ${workers} concurrent in chunks of ${ctx.cfg.jobChunk}` : 'no floor in this run (BENCH_JOB_FLOOR=0)'}`
      + `${perRecord ? `; raw SQL a record at a time ${perRecord.rps.toFixed(0)} records/s (service ${(rps / perRecord.rps * 100).toFixed(0)}% of it)` : ''}`
      + `${failed ? `; job ${job.state}, ${failed} records not succeeded${why}` : ''}`
      + `${timedOut ? `; not finished in ${limitSeconds} s (${succeeded} of ${records} succeeded; rate so far), then cancelled` : ''}`,
  });
}

export async function uploadMemory(ctx: Ctx): Promise<void> {
  const records = ctx.cfg.uploadRecords;
  const what = `migration job upload: ${records.toLocaleString('en-GB')} minimal records (account only), one request`;
  const target = 'RSS growth < 100 MB';
  if (!(await routeExists(ctx, 'POST', JOBS))) return notRun(ctx, what, target, 'endpoint not built yet');
  const id = await createJob(ctx);
  const server = ctx.server();
  log(`${ctx.store}: upload ${records} minimal records to job ${id}, sampling the service's RSS`);
  await sleep(500);
  const before = rssBytes(server.pid);
  let peak = before;
  const sampler = setInterval(() => { try { peak = Math.max(peak, rssBytes(server.pid)); } catch { /* exited */ } }, 25);
  const progress = setInterval(() => log(`${ctx.store}: upload: RSS ${(rssBytes(server.pid) / MB).toFixed(0)} MB (peak ${(peak / MB).toFixed(0)} MB)`), 15_000);
  const cpu = cpuSeconds(server.pid);
  let sent;
  try {
    sent = await upload(ctx, id, records, (n) => minimalRecordLine(ctx.tenant.supplier, 'U', n));
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
  }
  const cpuMs = (cpuSeconds(server.pid) - cpu) * 1000;
  const reply = sent.status === 200 ? JSON.parse(sent.body) as { received: number } : undefined;
  let received = reply?.received ?? 0;
  let committed = '';
  if (!reply) {
    // A cut or refused upload keeps its complete lines (D11): the job says how many.
    const total = (await api<JobView>(ctx, 'GET', `${JOBS}${id}/`)).json.counts?.total ?? 0;
    received = total;
    committed = `; ${total.toLocaleString('en-GB')} records kept by the job`;
  }
  const growth = (peak - before) / MB;
  const complete = sent.status === 200 && received === records;
  const row: Row = {
    store: ctx.store, what, connections: 1,
    service: { rps: received / sent.seconds, cpuMsPerRequest: cpuMs / Math.max(1, received), non2xx: complete ? 0 : 1, codes: { [sent.status]: 1 } },
    target, pass: complete && growth < 100,
    note: `${(sent.bytes / MB).toFixed(0)} MB in ${sent.seconds.toFixed(1)} s; RSS ${(before / MB).toFixed(0)} → ${(peak / MB).toFixed(0)} MB (+${growth.toFixed(0)} MB); `
      + `req/s column = records/s, CPU ms/req = per record${complete ? '' : `; answered ${sent.status}${committed}: ${sent.body.slice(0, 160)}`}`,
  };
  log(`${ctx.store}: upload ${sent.status}, ${received} records in ${sent.seconds.toFixed(1)} s, RSS +${growth.toFixed(0)} MB`);
  ctx.rows.push(row);
}

/**
 * A job from upload to its end: created (a pre-flight when `dryRun`), `lines` uploaded, started and
 * followed. The time is from start to completed; the upload is not in it.
 */
async function timedJob(ctx: Ctx, count: number, line: (n: number) => string, dryRun: boolean): Promise<{ seconds: number; job: JobView }> {
  const created = await api<JobView>(ctx, 'POST', JOBS, { import_supplier: ctx.tenant.supplier, operations_team_name: ctx.tenant.team, dry_run: dryRun });
  if (created.status !== 201) throw new Error(`POST migration-jobs/ answered ${created.status}: ${JSON.stringify(created.json).slice(0, 300)}`);
  const id = created.json.id;
  const sent = await upload(ctx, id, count, line);
  if (sent.status !== 200) throw new Error(`upload answered ${sent.status}: ${sent.body.slice(0, 300)}`);
  const started = performance.now();
  const start = await api<JobView>(ctx, 'POST', `${JOBS}${id}/start/`, {});
  if (start.status !== 200) throw new Error(`start answered ${start.status}: ${JSON.stringify(start.json).slice(0, 300)}`);
  let job = start.json;
  let lastLog = Date.now();
  const deadline = Date.now() + Math.max(900, count / 2) * 1000;
  while (job.state !== 'completed') {
    if (Date.now() > deadline) throw new Error(`job ${id} not completed in time: ${JSON.stringify(job.counts)}`);
    await sleep(250);
    job = (await api<JobView>(ctx, 'GET', `${JOBS}${id}/`)).json;
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`${ctx.store}: ${dryRun ? 'pre-flight' : 'real run'} ${job.state}: ${JSON.stringify(job.counts)}`);
    }
  }
  return { seconds: (performance.now() - started) / 1000, job };
}

/**
 * The pre-flight row: a dry-run job of full records against the real run of the same records, one
 * after the other on the same service. The pre-flight runs every step and writes nothing, so the
 * real run that follows still creates every account.
 */
export async function preflight(ctx: Ctx): Promise<void> {
  const records = ctx.cfg.jobRecords;
  const what = `pre-flight: ${records.toLocaleString('en-GB')} full records, dry run against the real run of the same records`;
  const target = '≥ 200% of the real run\'s records/s (at most half its time)';
  const templates = accountTemplates(ctx.factory, ctx.tenant.supplier, 'P', TEMPLATES);
  const line = (n: number) => jobRecordLine(templates, n);
  const workers = ctx.cfg.jobWorkers;
  log(`${ctx.store}: pre-flight of ${records} records`);
  const dry = await timedJob(ctx, records, line, true);
  log(`${ctx.store}: pre-flight done in ${dry.seconds.toFixed(1)} s; the real run of the same records`);
  const real = await timedJob(ctx, records, line, false);
  log(`${ctx.store}: real run done in ${real.seconds.toFixed(1)} s`);
  const failed = (dry.job.counts.failed ?? 0) + (real.job.counts.failed ?? 0);
  // As every row: the service's records/s over the baseline's, here the real run's.
  const ratio = real.seconds / dry.seconds;
  ctx.rows.push({
    store: ctx.store, what, connections: workers,
    service: { rps: records / dry.seconds, non2xx: dry.job.counts.failed ?? 0, codes: {} },
    baseline: { label: 'the real run of the same records', rps: records / real.seconds, errors: real.job.counts.failed ?? 0 },
    ratio, target, pass: failed === 0 && ratio >= 2,
    note: `pre-flight ${dry.seconds.toFixed(1)} s, real run ${real.seconds.toFixed(1)} s (from start to completed); `
      + `req/s = records/s; ${workers} workers (WORKER_CONCURRENCY)`,
  });
}
