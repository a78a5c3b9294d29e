import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

// The real server (src/main.ts) as a child process, for fault tests that kill it, run two of it, or
// point it at a database that goes away. It listens on PORT=0; the port is read from its JSON log.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Every log line so far (JSON from pino, or raw text). */
  readonly logs: string[];
  /** SIGKILL: no shutdown hook runs, in-flight transactions die with their connections. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the graceful shutdown to end. */
  stop(): Promise<void>;
}

export async function startServer(env: Record<string, string>, startTimeoutMs = 30_000, onLog?: (line: string) => void): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', DEMO_SEED: 'false', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  let exited = false;
  child.once('exit', () => { exited = true; });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`server did not listen within ${startTimeoutMs} ms:\n${logs.join('\n')}`)), startTimeoutMs);
    const fail = (error: Error) => { clearTimeout(timer); child.kill('SIGKILL'); reject(error); };
    const onLine = (line: string) => {
      logs.push(line);
      onLog?.(line);
      const match = /listening at http:\/\/[^\s"]*:(\d+)/i.exec(line);
      if (match) { clearTimeout(timer); resolve(Number(match[1])); }
    };
    lines(child.stdout!, onLine);
    lines(child.stderr!, onLine);
    child.once('exit', (code, signal) => fail(new Error(`server exited (${code ?? signal}) before listening:\n${logs.join('\n')}`)));
  });
  const waitExit = async () => { if (!exited) await once(child, 'exit'); };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    logs,
    async kill() {
      if (!exited) child.kill('SIGKILL');
      await waitExit();
    },
    async stop() {
      if (!exited) child.kill('SIGTERM');
      await waitExit();
    },
  };
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buffer = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffer += chunk;
    let index;
    while ((index = buffer.indexOf('\n')) >= 0) {
      onLine(buffer.slice(0, index));
      buffer = buffer.slice(index + 1);
    }
  });
}

export interface HttpAnswer { status: number; json: any; text: string; headers: Headers; ms: number }

/**
 * One JSON request over real HTTP with a hard deadline: a hang is an answer of its own (status 0,
 * text "timeout") so that a test can assert there was none. A refused connection is status -1.
 */
export async function request(
  base: string, method: string, path: string,
  options: { body?: unknown; token?: string; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<HttpAnswer> {
  const started = Date.now();
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Token ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await fetch(base + path, {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
    const text = await res.text();
    let json: any;
    try { json = JSON.parse(text); } catch { json = undefined; }
    return { status: res.status, json, text, headers: res.headers, ms: Date.now() - started };
  } catch (error) {
    const name = (error as Error).name;
    const timedOut = name === 'TimeoutError' || name === 'AbortError';
    return { status: timedOut ? 0 : -1, json: undefined, text: timedOut ? 'timeout' : String((error as Error).cause ?? error), headers: new Headers(), ms: Date.now() - started };
  }
}
