import { access, constants, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { convert, rejectsFileOf } from './convert.ts';
import { initMapping } from './init-mapping.ts';
import { loadMapping, MappingError, type Mapping } from './mapping.ts';

// `import-migrate convert --mapping FILE --out BOOK` and `convert --init FILE…`: the legacy CSV
// exports to a book, offline (no service, no API key). Exit 0 when every row was mapped, 1 when some
// went to the rejects file (or writing failed), 2 on a usage error or a bad mapping (with the line of the mapping).

export interface ConvertIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

export interface ConvertFlags { mapping?: string; out?: string; init?: boolean; json?: boolean }

export const CONVERT_SYNOPSIS = 'convert --mapping MAPPING.yaml --out BOOK.ndjson[.gz]\n  import-migrate convert --init ACCOUNTS.csv [CHILD.csv …]';

export async function convertCommand(flags: ConvertFlags, args: string[], io: ConvertIo): Promise<number> {
  const usage = (reason: string): number => { io.err(`import-migrate: ${reason}; usage: import-migrate ${CONVERT_SYNOPSIS.replace(/\n\s*/g, '; ')}\n`); return 2; };
  if (flags.init) {
    if (flags.mapping || flags.out) return usage('--init takes the CSV files only');
    if (args.length === 0) return usage('--init needs the accounts file (then the child files)');
    try {
      io.out(await initMapping(args));
      return 0;
    } catch (error) {
      return usage(`cannot read the files: ${(error as Error).message}`);
    }
  }
  if (args.length > 0) return usage(`unexpected argument "${args[0]}"`);
  if (!flags.mapping || !flags.out) return usage('give --mapping and --out');
  if (!(await access(dirname(flags.out), constants.W_OK).then(() => true, () => false))) return usage(`cannot write to ${dirname(flags.out)}`);
  let source: string;
  try { source = await readFile(flags.mapping, 'utf8'); } catch { return usage(`cannot read ${flags.mapping}`); }
  try {
    const mapping = await loadMapping(flags.mapping, source);
    const clash = await overwrittenInput(flags.out, flags.mapping, mapping);
    if (clash) return usage(clash);
    const chunkMb = Number(io.env.IMPORT_MIGRATE_SORT_MB);
    const summary = await convert(mapping, { out: flags.out, ...(chunkMb > 0 ? { sortChunkBytes: chunkMb * 1024 * 1024 } : {}) });
    if (flags.json) io.out(`${JSON.stringify({ out: flags.out, ...summary })}\n`);
    else {
      const reasons = Object.entries(summary.rejectsByReason).sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${n}`).join(', ');
      io.out(`${summary.records.toLocaleString('en-GB')} records written to ${flags.out}\n`
        + `${summary.rejects.toLocaleString('en-GB')} rows rejected${summary.rejects > 0 ? ` (${reasons}): see ${summary.rejectsFile}` : ''}\n`
        + (summary.sortedOnDisk.length > 0 ? `sorted on disk by key first: ${summary.sortedOnDisk.join(', ')}\n` : ''));
    }
    return summary.rejects > 0 ? 1 : 0;
  } catch (error) {
    if (error instanceof MappingError) {
      io.err(`import-migrate: bad mapping: ${error.message}\n`);
      return 2;
    }
    // A disk that fills up, an output folder that does not exist: one line, not a stack.
    io.err(`import-migrate: convert failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

/**
 * Why the outputs may not be written where --out says: the book and its rejects file are created
 * (truncated) before any row is read, so one that is an input file would destroy it unread. Compared
 * as real paths, so a relative path, `./` or a symbolic link to an input is caught too.
 */
async function overwrittenInput(out: string, mappingPath: string, mapping: Mapping): Promise<string | undefined> {
  // Each input by its real path and by its file identity (device and inode: a hard link, or another
  // spelling on a case-insensitive file system, is the same file under another path).
  const inputs = new Map<string, string>();
  const add = async (path: string, what: string) => {
    inputs.set(await realPath(path), what);
    const id = await identity(path);
    if (id) inputs.set(id, what);
  };
  await add(mappingPath, 'the mapping file');
  for (const file of mapping.files) await add(file.path, `the ${file.kind} file ${file.name}`);
  const find = async (path: string) => inputs.get(await realPath(path)) ?? inputs.get((await identity(path)) ?? '');
  const book = await find(out);
  if (book) return `--out ${out} is ${book}: it would be overwritten before it is read; write the book elsewhere`;
  const rejects = await find(rejectsFileOf(out));
  if (rejects) return `--out ${out} writes its rejects to ${rejectsFileOf(out)}, which is ${rejects}: it would be overwritten before it is read; write the book elsewhere`;
  return undefined;
}

/** The file's device and inode, or undefined for a file not there. */
async function identity(path: string): Promise<string | undefined> {
  try {
    const { dev, ino } = await stat(path);
    return `inode ${dev}:${ino}`;
  } catch {
    return undefined;
  }
}

/** The file's real path; for a file not there yet, its real folder's and its name (or the path as given, in a folder not there either). */
async function realPath(path: string): Promise<string> {
  try { return await realpath(path); } catch { /* not there yet */ }
  try { return join(await realpath(dirname(path)), basename(path)); } catch { return resolve(path); }
}
