import { PGlite } from '@electric-sql/pglite';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate } from '../../src/db/migrate.ts';
import { pgliteScript } from '../../src/db/store.ts';

// A PGlite data directory with every migration applied, made once per installed PGlite version and
// set of migrations, and kept in the system's temporary directory: every test file's in-memory store
// starts from it instead of running PostgreSQL's initdb and the migrations again (about 3.5 s and
// 0.8 s of CPU a store, where loading the tar takes under one). The store's own migrate() then finds
// nothing left to apply. A migration added or edited makes another file (the key hashes their text).
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { version } = JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string };
const PREFIX = 'account-migration-pglite-';
const FILE = join(tmpdir(), `${PREFIX}${version}-${migrationsHash()}.tar`);

function migrationsHash(): string {
  const dir = join(ROOT, 'migrations');
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) hash.update(`${name}\0`).update(readFileSync(join(dir, name))).update('\0');
  return hash.digest('hex').slice(0, 16);
}

let made: Promise<Blob> | undefined;

/**
 * A new temporary DATA_DIR for an embedded store, already holding the template (on PostgreSQL, an empty
 * directory): the first command a test runs there opens a migrated store instead of making one. Make
 * it at a test file's top level, with the `after` hook that removes it: made inside a test,
 * shutdown.test.ts once never exited.
 */
export async function seededDataDir(prefix: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // A PGlite data directory on disk is the tar's content, as it is: tar writes it without starting a
  // PGlite in the test's process (one opened on a directory there kept some test files from exiting).
  if (!process.env.DATABASE_URL) execFileSync('tar', ['-x', '-C', dir], { input: Buffer.from(await (await pgliteTemplate()).arrayBuffer()) });
  return dir;
}

export function pgliteTemplate(): Promise<Blob> {
  made ??= load();
  return made;
}

async function load(): Promise<Blob> {
  try {
    return new Blob([await readFile(FILE)]);
  } catch {
    return make();
  }
}

async function make(): Promise<Blob> {
  const db = await PGlite.create('memory://');
  try {
    await migrate({ withSession: (work) => work(pgliteScript(db)) });
    const tar = await db.dumpDataDir('none');
    // Written aside and renamed, so a test file starting meanwhile reads a whole file or none. Kept
    // only if it can be: a temporary directory that cannot be written costs time, not a failure.
    // Templates of other versions or migrations are removed (40 MB each).
    const aside = `${FILE}.${process.pid}`;
    await writeFile(aside, Buffer.from(await tar.arrayBuffer())).then(() => rename(aside, FILE)).catch(() => undefined);
    const stale = readdirSync(tmpdir()).filter((name) => name.startsWith(PREFIX) && name.endsWith('.tar') && join(tmpdir(), name) !== FILE);
    await Promise.all(stale.map((name) => unlink(join(tmpdir(), name)).catch(() => undefined)));
    return tar;
  } finally {
    await db.close();
  }
}
