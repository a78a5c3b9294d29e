import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

// Every measured party runs in a process of its own: the service, the bare echo server, the load
// generator and the raw-SQL baselines. This process only starts them, waits, and reads /proc.
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

export interface Server { url: string; pid: number; child: ChildProcess; logFile: string; stop(): Promise<void> }

export interface StartOptions {
  name: string;
  script: string;
  env: Record<string, string>;
  logDir: string;
  cpuProfileDir?: string | undefined;
  readyPath?: string;
}

/** Starts `node --import tsx <script>` on a free port and waits until `readyPath` answers 200. */
export async function startServer(options: StartOptions): Promise<Server> {
  const port = await freePort();
  const logFile = join(options.logDir, `${options.name}-${port}.log`);
  const out = openSync(logFile, 'a');
  const args = ['--import', 'tsx', ...(options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : []), options.script];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', out, out],
  });
  const url = `http://127.0.0.1:${port}`;
  let exited = false;
  child.once('exit', () => { exited = true; });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) throw new Error(`${options.name} exited during start; see ${logFile}:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${url}${options.readyPath ?? '/healthz'}`);
      if (res.ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`${options.name} did not start in 120 s; see ${logFile}`);
    await sleep(100);
  }
  return {
    url, pid: child.pid!, child, logFile,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await once(child, 'exit').catch(() => {});
      clearTimeout(timer);
    },
  };
}

function tail(file: string): string {
  try { return readFileSync(file, 'utf8').slice(-2000); } catch { return ''; }
}

/** Runs a bench script in a child process; its last stdout line is its JSON result. */
export async function runJsonChild<T>(script: string, input: unknown, env: Record<string, string> = {}): Promise<T> {
  // Through a file: inputs (paths, bodies) can be far larger than an environment variable may be.
  const dir = mkdtempSync(join(tmpdir(), 'bench-input-'));
  const inputFile = join(dir, 'input.json');
  writeFileSync(inputFile, JSON.stringify(input));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, ...env, BENCH_INPUT_FILE: inputFile },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  const [code] = await once(child, 'exit') as [number | null];
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  const last = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as T;
}

/** Resident set size of a process in bytes, from /proc (Linux). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) * 1024;
}

/** The input a child script was given by runJsonChild. */
export function childInput<T>(): T {
  const file = process.env.BENCH_INPUT_FILE;
  if (!file) throw new Error('run this script through bench/run.ts (BENCH_INPUT_FILE is not set)');
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (Linux, 100 Hz ticks). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
