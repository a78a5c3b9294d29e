import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

// A throwaway PostgreSQL cluster of the test's own, so a test can stop and restart the database
// under load without touching the machine's shared server (other tests and CI live there).
// initdb refuses to run as root: as root, the cluster belongs to the `postgres` OS user.
const run = promisify(execFile);

export interface PgCluster {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops fast (open sessions are terminated) and starts again. */
  restart(): Promise<void>;
  /** Stops the server and removes its files. */
  destroy(): Promise<void>;
}

/** The directory of initdb/pg_ctl, or undefined when PostgreSQL's server binaries are not installed. */
export function findPgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')) && existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0]!, 'bin') : undefined;
}

/** Why a cluster cannot be made here, or undefined when it can. */
export async function pgClusterUnavailable(): Promise<string | undefined> {
  if (!findPgBin()) return 'PostgreSQL server binaries (initdb, pg_ctl) are not installed under /usr/lib/postgresql';
  if (process.getuid?.() === 0) {
    try { await run('id', ['-u', 'postgres']); } catch { return 'running as root and there is no postgres OS user to own a cluster'; }
    try { await run('runuser', ['--help']); } catch { return 'running as root and runuser is not available'; }
  }
  return undefined;
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = findPgBin();
  if (!bin) throw new Error('PostgreSQL server binaries not found');
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'faults-pg-'));
  if (asRoot) {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const exec = async (program: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, program), ...args]] : [join(bin, program), args];
    try {
      return await run(file, argv, { timeout: 60_000 });
    } catch (error) {
      const e = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${program} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
    }
  };
  const data = join(dir, 'data');
  await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  const port = await freePort();
  // Durability is not under test here; fsync off keeps start, stop and the test fast.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const pgCtl = (...args: string[]) => exec('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', ...args]);
  let running = false;
  const cluster: PgCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    async start() { await pgCtl('-o', options, 'start'); running = true; },
    async stop() { await pgCtl('-m', 'fast', 'stop'); running = false; },
    async restart() { await pgCtl('-m', 'fast', '-o', options, 'restart'); running = true; },
    async destroy() {
      if (running) {
        try { await pgCtl('-m', 'immediate', 'stop'); } catch { /* already gone */ }
        running = false;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await cluster.start();
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
  return cluster;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
