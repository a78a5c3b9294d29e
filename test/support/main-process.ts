import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

// The server as `npm start` runs it (node --import tsx src/main.ts), as a child process on a free
// port, for tests of start-up, the demo seed, the store lock and shutdown.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface MainProcess {
  readonly pid: number;
  readonly baseUrl: string;
  readonly exitCode: number | null;
  stdout(): string;
  stderr(): string;
  fetchJson(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; json: any }>;
  /** SIGTERM, then the exit status once it has shut down. */
  stop(): Promise<number | null>;
}

export interface StartOptions {
  /** Resolve once stdout matches this too (output printed after listening). */
  waitFor?: RegExp;
  /** The process is expected to exit on its own (a refusal): resolve when it does. */
  expectExit?: boolean;
  timeoutMs?: number;
}

export async function startMain(env: Record<string, string>, options: StartOptions = {}): Promise<MainProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let exitCode: number | null = null;
  const exited = once(child, 'exit').then(([code]) => { exitCode = code as number | null; });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk; });

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let baseUrl = '';
  for (;;) {
    if (options.expectExit) {
      if (exitCode !== null || child.exitCode !== null) { await exited; break; }
    } else {
      baseUrl = /listening at (http:\/\/[^"\s]+)/.exec(out)?.[1] ?? '';
      if (baseUrl && (!options.waitFor || options.waitFor.test(out))) break;
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before listening:\n${out}\n${err}`);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server did not ${options.expectExit ? 'exit' : 'listen'} in time:\n${out}\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  return {
    pid: child.pid!,
    baseUrl,
    get exitCode() { return exitCode; },
    stdout: () => out,
    stderr: () => err,
    async fetchJson(method, path, body, token) {
      const res = await fetch(baseUrl + path, {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Token ${token}` } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      let json: any;
      try { json = JSON.parse(text); } catch { json = undefined; }
      return { status: res.status, json };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      return exitCode;
    },
  };
}
