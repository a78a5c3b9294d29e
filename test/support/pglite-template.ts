import { PGlite } from '@electric-sql/pglite';
import { readFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// An empty PGlite data directory, made once per installed PGlite version and kept in the system's
// temporary directory: every test file's in-memory store starts from it instead of running
// PostgreSQL's initdb again (about 3.5 s of CPU a store, where loading the tar takes under one).
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { version } = JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string };
const FILE = join(tmpdir(), `account-migration-pglite-${version}.tar`);

let made: Promise<Blob> | undefined;

export function pgliteTemplate(): Promise<Blob> {
  made ??= load();
  return made;
}

async function load(): Promise<Blob> {
  try {
    return new Blob([await readFile(FILE)]);
  } catch {
    const db = await PGlite.create('memory://');
    try {
      const tar = await db.dumpDataDir('none');
      // Written aside and renamed, so a test file starting meanwhile reads a whole file or none. Kept
      // only if it can be: a temporary directory that cannot be written costs time, not a failure.
      const aside = `${FILE}.${process.pid}`;
      await writeFile(aside, Buffer.from(await tar.arrayBuffer())).then(() => rename(aside, FILE)).catch(() => undefined);
      return tar;
    } finally {
      await db.close();
    }
  }
}
