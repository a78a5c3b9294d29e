import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { writeLegacyExport } from '../../test/support/legacy-export.ts';
import type { BenchConfig } from '../config.ts';
import { cpuSeconds, ROOT, rssBytes } from '../lib/proc.ts';
import type { Row } from '../lib/report.ts';
import { log } from './context.ts';

// `import-migrate convert` on a generated legacy export (examples/legacy-export's layout and mapping):
// N accounts with their customers, supply points, meters, agreements, a statement, a note every
// 4th, and T transactions each written month by month, as a ledger exports them, so the converter
// must sort them on disk. The converter runs as users run it (the bin, a child process) and its
// VmRSS is sampled every 50 ms; growth is the peak over the RSS once it has started (first second).
const MB = 1024 * 1024;

export async function convertExport(cfg: BenchConfig, workDir: string, rows: Row[]): Promise<void> {
  const accounts = cfg.convertAccounts;
  const what = `convert: legacy export of ${accounts.toLocaleString('en-GB')} accounts, ${cfg.convertTransactions} transactions each (unsorted), to .ndjson.gz`;
  const target = 'RSS growth < 200 MB';
  const dir = join(workDir, 'legacy-export');
  mkdirSync(dir, { recursive: true });
  try {
    const generating = Date.now();
    await writeLegacyExport({ dir, accounts, transactionsPerAccount: cfg.convertTransactions, order: 'by-date', seed: 1 });
    copyFileSync(join(ROOT, 'examples/legacy-export/mapping.yaml'), join(dir, 'mapping.yaml'));
    const inputMb = ['accounts', 'customers', 'supply_points', 'meters', 'agreements', 'transactions', 'statements', 'notes']
      .reduce((sum, f) => sum + statSync(join(dir, `${f}.csv`)).size, 0) / MB;
    log(`convert: wrote ${inputMb.toFixed(0)} MB of CSV in ${((Date.now() - generating) / 1000).toFixed(0)} s; converting`);

    const out = join(dir, 'book.ndjson.gz');
    const started = Date.now();
    const child = spawn(process.execPath, ['bin/import-migrate.js', 'convert', '--mapping', join(dir, 'mapping.yaml'), '--out', out, '--json'],
      { cwd: ROOT, env: { ...process.env, TMPDIR: dir }, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    const pid = child.pid!;
    let before = 0;
    let peak = 0;
    let cpu = 0;
    const sample = setInterval(() => {
      try {
        const rss = rssBytes(pid);
        cpu = cpuSeconds(pid);
        if (Date.now() - started < 1000) before = Math.max(before, rss);
        peak = Math.max(peak, rss);
      } catch { /* exited */ }
    }, 50);
    const progress = setInterval(() => log(`convert: RSS peak ${(peak / MB).toFixed(0)} MB after ${((Date.now() - started) / 1000).toFixed(0)} s`), 30_000);
    const [code] = await once(child, 'exit') as [number | null];
    clearInterval(sample);
    clearInterval(progress);
    const seconds = (Date.now() - started) / 1000;
    const summary = JSON.parse(stdout.trim() || '{}') as { records?: number; rejects?: number; sortedOnDisk?: string[] };
    const growth = (peak - before) / MB;
    const complete = code === 0 && summary.records === accounts;
    rows.push({
      store: 'client', what, connections: 1,
      service: { rps: accounts / seconds, cpuMsPerRequest: (cpu * 1000) / accounts, errors: complete ? 0 : 1, ...(complete ? {} : { firstError: `exit ${code}: ${stdout.slice(0, 160)}` }) },
      target, pass: complete && growth < 200,
      note: `${inputMb.toFixed(0)} MB of CSV → ${(statSync(out).size / MB).toFixed(0)} MB gzip in ${seconds.toFixed(0)} s; sorted on disk: ${(summary.sortedOnDisk ?? []).join(', ') || 'none'}; `
        + `RSS ${(before / MB).toFixed(0)} → ${(peak / MB).toFixed(0)} MB (+${growth.toFixed(0)} MB); req/s column = accounts/s, CPU ms/req = per account`,
    });
    log(`convert: exit ${code}, ${summary.records} records in ${seconds.toFixed(1)} s (${(accounts / seconds).toFixed(0)} accounts/s), RSS +${growth.toFixed(0)} MB`);
  } finally {
    if (process.env.BENCH_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
  }
}
