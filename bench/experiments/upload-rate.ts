import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { accountTemplates, loadPayloadFactory } from '../lib/account-payload.ts';
import { jobRecordLine, minimalRecordLine } from '../lib/job-records.ts';
import { uploadNdjson } from '../lib/ndjson-upload.ts';
import { cpuSeconds, ROOT, startServer } from '../lib/proc.ts';
import { dropDatabases, freshTarget, provision, serviceEnv } from '../lib/setup.ts';

// A job's upload alone, timed: a fresh PostgreSQL database, the service started from `ROOTS` (code
// trees, e.g. this one and a worktree at an older commit, run in turn, ROUNDS times), one job, and
// RECORDS full records (the job row's lines) or minimal ones streamed to it in one request. Prints
// records a second and the service's CPU a record for each run.
//
// PROF=<dir> writes the service's CPU profiles there.
//
// Usage: RECORDS=20000 KIND=full|minimal ROUNDS=3 ROOTS=.,../old node --import tsx bench/experiments/upload-rate.ts

const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const records = Number(process.env.RECORDS ?? 20_000);
const kind = process.env.KIND ?? 'full';
const rounds = Number(process.env.ROUNDS ?? 3);
const roots = (process.env.ROOTS ?? '.').split(',');
const logDir = join(ROOT, '.bench-data', 'upload-rate');
mkdirSync(logDir, { recursive: true });
const { factory } = await loadPayloadFactory();

/** Busy and all CPU ticks of the machine so far (/proc/stat). */
function machineTicks(): [number, number] {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const ticks = fields.map(Number);
  const idle = ticks[3]! + ticks[4]!;
  const all = ticks.reduce((a, b) => a + b, 0);
  return [all - idle, all];
}

for (let round = 0; round < rounds; round += 1) {
  for (const root of roots) {
    const name = `upload_rate_${process.pid}_${round}`;
    const target = await freshTarget('postgres', adminUrl, name);
    const tenant = await provision(target);
    const server = await startServer({ name: 'upload-rate', script: join(root, 'src/main.ts'), env: serviceEnv(target, 'warn'), logDir, cpuProfileDir: process.env.PROF });
    try {
      const headers = { authorization: `Token ${tenant.token}`, 'content-type': 'application/json' };
      const created = await fetch(`${server.url}/v1/data-import/migration-jobs/`, {
        method: 'POST', headers, body: JSON.stringify({ import_supplier: tenant.supplier, operations_team_name: tenant.team }),
      });
      const { id } = await created.json() as { id: string };
      const templates = accountTemplates(factory, tenant.supplier, 'U', 20);
      const line = kind === 'full' ? (n: number) => jobRecordLine(templates, n) : (n: number) => minimalRecordLine(tenant.supplier, 'U', n);
      const cpu = cpuSeconds(server.pid);
      const machine = machineTicks();
      const sent = await uploadNdjson(`${server.url}/v1/data-import/migration-jobs/${id}/records/`, headers, records, line);
      const cpuMs = (cpuSeconds(server.pid) - cpu) * 1000;
      const [busy, all] = machineTicks().map((v, i) => v - machine[i]!);
      if (sent.status !== 200) throw new Error(`upload answered ${sent.status}: ${sent.body.slice(0, 300)}`);
      console.log(`${root.padEnd(12)} ${kind} ${records}: ${(records / sent.seconds).toFixed(0)} records/s, ${(sent.bytes / 1e6 / sent.seconds).toFixed(1)} MB/s, `
        + `service CPU ${(cpuMs / records).toFixed(3)} ms a record (${(cpuMs / 1000 / sent.seconds * 100).toFixed(0)}% of a core); `
        + `the machine ${(busy! / all! * 100).toFixed(0)}% busy (both cores, PostgreSQL and this client included)`);
    } finally {
      await server.stop();
      await dropDatabases(adminUrl, [name]);
    }
  }
}
