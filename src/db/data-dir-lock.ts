import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The embedded store (PGlite) belongs to one process at a time: two processes over one DATA_DIR
// would corrupt it (D2). The holder writes DATA_DIR/server.pid; the file is created atomically
// (a complete temporary file hard-linked into place, which fails if one exists), and a file whose
// process is gone (a crash, a kill -9) is stale and taken over. Not used with DATABASE_URL.
export const LOCK_FILE = 'server.pid';

export type LockRole = 'server' | 'import-admin';

export interface LockHolder { pid: number; role: LockRole; since: string }

export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  constructor(readonly dataDir: string, readonly holder: LockHolder) {
    super(holder.role === 'server'
      ? `the embedded store in ${dataDir} is in use by a running server (pid ${holder.pid}); stop the server first, or use PostgreSQL (DATABASE_URL)`
      : `the embedded store in ${dataDir} is in use by import-admin (pid ${holder.pid}); wait for it to finish, or use PostgreSQL (DATABASE_URL)`);
  }
}

export interface DataDirLock { readonly path: string; release(): void }

// Lock files this process holds, so that its own pid in a file is told apart from a stale file
// left by an earlier process that had the same pid (pid 1 in a restarted container).
const held = new Set<string>();

export function acquireDataDirLock(dataDir: string, role: LockRole): DataDirLock {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  const mine: LockHolder = { pid: process.pid, role, since: new Date().toISOString() };
  const temp = `${path}.${process.pid}.${Date.now()}`;
  writeFileSync(temp, `${JSON.stringify(mine)}\n`);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(temp, path);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw lockError(error, dataDir, path);
        const holder = readHolder(path);
        if (holder && isAlive(holder.pid) && (holder.pid !== process.pid || held.has(path))) {
          throw new DataDirLockedError(dataDir, holder);
        }
        removeQuietly(path);
      }
    }
  } finally {
    removeQuietly(temp);
  }
  held.add(path);
  const release = () => {
    if (!held.delete(path)) return;
    if (readHolder(path)?.pid === process.pid) removeQuietly(path);
    process.removeListener('exit', release);
  };
  // A process that dies on an uncaught error still runs 'exit' listeners: leave no file behind.
  process.on('exit', release);
  return { path, release };
}

function lockError(error: unknown, dataDir: string, path: string): Error {
  const holder = readHolder(path);
  if (holder && isAlive(holder.pid)) return new DataDirLockedError(dataDir, holder);
  return new Error(`cannot lock the embedded store in ${dataDir}: ${(error as Error).message}`);
}

function readHolder(path: string): LockHolder | undefined {
  let text: string;
  try { text = readFileSync(path, 'utf8'); } catch { return undefined; }
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (Number.isInteger(value.pid) && (value.pid ?? 0) > 0) {
      return { pid: value.pid!, role: value.role === 'import-admin' ? 'import-admin' : 'server', since: String(value.since ?? '') };
    }
  } catch {
    // A bare pid, as other tools write it.
    const pid = Number(text.trim());
    if (Number.isInteger(pid) && pid > 0) return { pid, role: 'server', since: '' };
  }
  return undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function removeQuietly(path: string): void {
  try { unlinkSync(path); } catch { /* already gone */ }
}
