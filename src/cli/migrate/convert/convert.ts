import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { csvRows, type Row } from './csv-rows.ts';
import { ExternalSorter } from './external-sort.ts';
import { recordJson } from './json-text.ts';
import type { FileMapping, Mapping } from './mapping.ts';
import { buildRecord, type Reject } from './record-builder.ts';
import { LineWriter, RejectsWriter } from './writers.ts';
import type { FileKind } from './targets.ts';

// The conversion: every file read as a stream of rows in key order, joined in one pass on the
// accounts file. Files already sorted by key are read as they are; the first row found out of order
// stops the pass; that file and every other one not in order are then sorted on disk, and a second
// pass joins them. When the accounts file itself had to be sorted, the records are sorted back into
// its order on disk before they are written.

export interface ConvertOptions {
  out: string;
  /** Bytes of row text held in memory by one sort before it writes a run (default 8 MiB: the heap it takes is several times that). */
  sortChunkBytes?: number;
  /** Where sort runs go (default: the system's temporary directory). */
  tempDir?: string;
}

export interface ConvertSummary {
  records: number;
  rejects: number;
  rejectsByReason: Record<string, number>;
  rejectsFile: string;
  /** The files that were not sorted by key and were sorted on disk. */
  sortedOnDisk: FileKind[];
}

class NotSorted extends Error {
  constructor(readonly file: FileMapping) { super(`${file.name} is not sorted by ${file.columns[0]}`); }
}

// A row in a sort run: `join-key NUL line-number NUL JSON of the values and fault`. As a string it
// sorts by key, then by the row's line (fixed width), so rows of one key keep the file's order. The
// key stays raw text, so the run sorts as the join compares; the JSON holds no NUL, so the line
// number is found from the end (the sorter keeps line breaks in a key apart from its own).
const LINE_WIDTH = 12;
const rowLine = (row: Row) => `${row.key}\u0000${String(row.line).padStart(LINE_WIDTH, '0')}\u0000${JSON.stringify([row.values, row.fault ?? null])}`;
function rowOf(text: string): Row {
  const json = text.lastIndexOf('\u0000') + 1;
  const [values, fault] = JSON.parse(text.slice(json)) as [string[], Row['fault'] | null];
  const row: Row = { line: Number(text.slice(json - 1 - LINE_WIDTH, json - 1)), key: text.slice(0, json - 2 - LINE_WIDTH), values };
  if (fault) row.fault = fault;
  return row;
}
/** A record waiting to go back into the accounts file's order: `line-number TAB JSON`. */
const recordLine = (line: number, json: string) => `${String(line).padStart(LINE_WIDTH, '0')}\t${json}`;

export async function convert(mapping: Mapping, options: ConvertOptions): Promise<ConvertSummary> {
  const chunkBytes = options.sortChunkBytes ?? 8 * 1024 * 1024;
  const temp = await mkdtemp(join(options.tempDir ?? tmpdir(), 'import-migrate-convert-'));
  const toSort = new Set<FileMapping>();
  try {
    for (;;) {
      try {
        return await joinPass(mapping, options.out, toSort, temp, chunkBytes);
      } catch (error) {
        if (!(error instanceof NotSorted)) throw error;
        // One file out of order: look at the others whole now, so one more pass is enough.
        toSort.add(error.file);
        for (const file of mapping.files) if (!toSort.has(file) && !(await isSorted(file))) toSort.add(file);
      }
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

async function isSorted(file: FileMapping): Promise<boolean> {
  let last: string | undefined;
  const keyOnly = { columns: file.columns.slice(0, 1), positions: file.positions.slice(0, 1), keyOf: file.keyOf };
  for await (const row of csvRows(file.path, file.csv, keyOnly)) {
    if (last !== undefined && row.key < last) return false;
    last = row.key;
  }
  return true;
}

/** A file's rows in key order: as read (and checked) or through an on-disk sort. */
class RowSource {
  private head: Row | undefined;
  private last: string | undefined;
  private constructor(readonly file: FileMapping, private readonly rows: AsyncIterator<Row>, private readonly checked: boolean) {}

  static async open(file: FileMapping, sort: boolean, temp: string, chunkBytes: number): Promise<RowSource> {
    const rows = csvRows(file.path, file.csv, file);
    if (!sort) return RowSource.start(new RowSource(file, rows, true));
    const sorter = new ExternalSorter(temp, file.kind, chunkBytes);
    for await (const row of rows) await sorter.add(rowLine(row));
    return RowSource.start(new RowSource(file, mapRows(sorter.sorted(), rowOf), false));
  }

  private static async start(source: RowSource): Promise<RowSource> {
    await source.advance();
    return source;
  }

  peek(): Row | undefined { return this.head; }

  async take(): Promise<Row> {
    const row = this.head!;
    await this.advance();
    return row;
  }

  private async advance(): Promise<void> {
    const next = await this.rows.next();
    this.head = next.done ? undefined : next.value;
    if (!this.head || !this.checked) return;
    const key = this.head.key;
    if (this.last !== undefined && key < this.last) throw new NotSorted(this.file);
    this.last = key;
  }
}

/** The rejects file written beside the book. */
export const rejectsFileOf = (out: string) => `${out}.rejects.csv`;

async function joinPass(mapping: Mapping, out: string, toSort: Set<FileMapping>, temp: string, chunkBytes: number): Promise<ConvertSummary> {
  const rejectsFile = rejectsFileOf(out);
  const rejects = new RejectsWriter(rejectsFile);
  const output = new LineWriter(out);
  try {
    const reject = (r: Reject) => rejects.add(r);
    const accountsFile = mapping.files[0]!;
    const sources: RowSource[] = [];
    for (const file of mapping.files) sources.push(await RowSource.open(file, toSort.has(file), temp, chunkBytes));
    const [accounts, ...children] = sources as [RowSource, ...RowSource[]];
    // Records come out in key order; when that is not the accounts file's order they are put back in it.
    const reorder = toSort.has(accountsFile) ? new ExternalSorter(temp, 'records', chunkBytes) : undefined;
    let records = 0;
    let previous: Row | undefined;
    while (accounts.peek()) {
      const row = await accounts.take();
      // The key is the account number as mapped (mapping.ts): `A1 ` and `a1` are A1 again.
      const key = row.key;
      if (previous && previous.key === key) {
        reject({ file: accountsFile, row: row.line, key: row.values[0]!, column: accountsFile.columns[0]!, reason: 'duplicate_key', detail: `account ${key} is already on row ${previous.line}` });
        continue;
      }
      previous = row;
      const mine = new Map<FileMapping, Row[]>();
      for (const child of children) {
        const rows: Row[] = [];
        for (let head = child.peek(); head && head.key <= key; head = child.peek()) {
          const taken = await child.take();
          if (taken.key === key) rows.push(taken);
          else reject(orphan(child.file, taken));
        }
        mine.set(child.file, rows);
      }
      const record = buildRecord(accountsFile, row, mine, reject);
      if (!record) continue;
      records++;
      const json = recordJson(record);
      if (reorder) await reorder.add(recordLine(row.line, json));
      else await output.write(json);
    }
    for (const child of children) while (child.peek()) reject(orphan(child.file, await child.take()));
    if (reorder) for await (const line of reorder.sorted()) await output.write(line.slice(LINE_WIDTH + 1));
    await output.close();
    await rejects.close();
    return { records, rejects: rejects.count, rejectsByReason: rejects.byReason, rejectsFile, sortedOnDisk: mapping.files.filter((f) => toSort.has(f)).map((f) => f.kind) };
  } catch (error) {
    output.destroy();
    rejects.destroy();
    throw error;
  }
}

async function* mapRows(lines: AsyncIterable<string>, parse: (line: string) => Row): AsyncGenerator<Row> {
  for await (const line of lines) yield parse(line);
}

const orphan = (file: FileMapping, row: Row): Reject => ({
  file, row: row.line, key: row.values[0]!, column: file.columns[0]!, reason: 'orphan', detail: `no account ${row.key} in the accounts file`,
});
