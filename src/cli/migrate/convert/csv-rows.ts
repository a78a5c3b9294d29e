import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { open } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import { parse, type CsvError, type Options } from 'csv-parse';
import type { RejectReason } from './transforms.ts';

// Reading a legacy CSV file with csv-parse: the header, then each row projected on the columns the
// mapping uses. A row that cannot be read (a field count other than the header's, bytes that are
// not in the file's encoding) comes out with its problem, so its account can take its children with
// it; a stray quote is reported and skipped. One broken line never stops a conversion.

export interface CsvOptions { delimiter?: string; quote?: string; encoding?: 'utf8' | 'latin1' }

/** Why a row cannot be used, found while reading it. */
export interface RowFault { column: string; reason: RejectReason; detail: string }

/**
 * A row of a file: its line in the file (the header is line 1, a row spanning lines is at its last),
 * its join key (the first value, as the caller normalises it) and the projected values, key first.
 */
export interface Row { line: number; key: string; values: string[]; fault?: RowFault }

/** A reject found by the reader itself, with no row to carry it (a quote never closed). */
export interface ReadFault extends RowFault { line: number; key: string }

const parserOptions = (csv: CsvOptions): Options => ({
  delimiter: csv.delimiter ?? ',', quote: csv.quote ?? '"',
  // csv-parse decodes each field, and turns bytes that are not UTF-8 into U+FFFD: Utf8Watch tells
  // such a field from one that holds U+FFFD itself, so a Latin-1 export read as UTF-8 is refused.
  encoding: csv.encoding ?? 'utf8',
  // Both line endings, mixed in one file too (an export concatenated from two systems): a file's
  // first line does not decide, so no row keeps a '\r' and none is merged with the next.
  record_delimiter: ['\r\n', '\n'],
  // The field count is checked here against the header, not against a pass's first row.
  relax_column_count: true,
  skip_empty_lines: true, skip_records_with_error: true,
});

export class EmptyFile extends Error {
  constructor(path: string) { super(`the data file ${path} is empty: it needs at least its header line`); }
}

/** The header's names, trimmed; an EmptyFile for a file with no line at all. */
export async function readHeader(path: string, csv: CsvOptions): Promise<string[]> {
  const parser = (await input(path)).pipe(parse({ ...parserOptions(csv), to: 1 }));
  for await (const record of parser) return (record as string[]).map((name) => name.trim());
  throw new EmptyFile(path);
}

/** The columns a row is projected on (names for the rejects, positions in the header), and how the key is normalised for the join. */
export interface Projection { columns: string[]; positions: number[]; keyOf?: ((raw: string) => string) | undefined }

export async function* csvRows(path: string, csv: CsvOptions, projection: Projection, onFault: (fault: ReadFault) => void): AsyncGenerator<Row> {
  const width = (await readHeader(path, csv)).length;
  let start: Start = { line: 0 };
  for (;;) {
    const unclosedAfter = yield* pass(path, csv, projection, width, start, onFault);
    if (unclosedAfter === undefined) return;
    // A quote opened and never closed swallows the rest of the file into one field. The row it
    // opened on is left out, and reading starts again on the next line (csv-parse's from_line
    // would still read the quote): the rows after it are read, and their accounts keep their
    // children, instead of vanishing with it.
    const opened = await lineWithText(path, unclosedAfter + 1);
    if (!opened) return;
    onFault({ line: opened.line, key: '', column: '', reason: 'malformed_row', detail: `a quote opened on line ${opened.line} is never closed; reading goes on at line ${opened.line + 1}` });
    start = { line: opened.line, byte: opened.next };
  }
}

/** Where a pass starts: after `line` lines, at `byte` (undefined: the file's start, past a byte-order mark). */
interface Start { line: number; byte?: number }

/** One parse from `fromLine`; returns the last line read when a quote was left open at the end. */
async function* pass(path: string, csv: CsvOptions, { columns, positions, keyOf }: Projection, width: number, start: Start, onFault: (fault: ReadFault) => void): AsyncGenerator<Row, number | undefined> {
  const parser = parse(parserOptions(csv));
  let lastLine = start.line;
  let unclosed = false;
  parser.on('skip', (error: CsvError & { lines?: number }) => {
    if (error.code === 'CSV_QUOTE_NOT_CLOSED') { unclosed = true; return; }
    // csv-parse may report one row twice (a stray quote, then the field count).
    if (start.line + (error.lines ?? 0) === lastLine && lastLine > start.line) return;
    lastLine = start.line + (error.lines ?? 0);
    onFault({ line: lastLine, key: '', column: '', reason: 'malformed_row', detail: readError(error) });
  });
  // The row's line is read from the parser as it hands the record on (its `info` option costs a
  // copy of the parser's state per record, a quarter of the parsing time); the projection is made
  // there too, so only the columns the mapping uses are kept.
  const push = parser.push.bind(parser);
  const watch = new Utf8Watch(csv.encoding !== 'latin1');
  let header = start.byte === undefined;
  parser.push = (record: string[] | null) => {
    if (record === null) return push(null);
    lastLine = start.line + parser.info.lines;
    if (header) { header = false; return true; }
    const row: Row = { line: lastLine, key: '', values: new Array<string>(positions.length) };
    for (let i = 0; i < positions.length; i++) {
      const text = record[positions[i]!] ?? '';
      row.values[i] = text;
      if (watch.invalid && text.includes('\uFFFD')) row.fault ??= encodingFault(columns[i]!, text);
    }
    row.key = keyOf ? keyOf(row.values[0]!) : row.values[0]!;
    if (record.length !== width) row.fault = { column: '', reason: 'malformed_row', detail: `${record.length} fields where the header has ${width}` };
    return push(row);
  };
  const stream = start.byte === undefined ? await input(path) : createReadStream(path, { start: start.byte });
  stream.on('error', (error) => parser.destroy(error));
  stream.pipe(watch).pipe(parser);
  yield* parser as AsyncIterable<Row>;
  return unclosed ? lastLine : undefined;
}

// csv-parse's own words for a stray quote quote the field as it has read it so far; these say what to do.
const STRAY_QUOTES: Record<string, string> = {
  CSV_INVALID_OPENING_QUOTE: 'a quote inside a field that does not start with one',
  CSV_INVALID_CLOSING_QUOTE: 'text after the quote that closes a field',
};
function readError(error: CsvError & { column?: number }): string {
  const words = STRAY_QUOTES[error.code];
  return words ? `${words} (field ${(error.column ?? 0) + 1}): double a quote inside a quoted field ("")` : error.message;
}

const encodingFault = (column: string, text: string): RowFault => ({
  column, reason: 'invalid_encoding',
  detail: `${column} has bytes that are not UTF-8 (read as "${text}"); if the file is Latin-1, give encoding: latin1 in the mapping's csv settings`,
});

/**
 * Passes the file's bytes on unchanged, checking them as UTF-8 on the way (whole chunks, natively:
 * checking each field instead made a conversion 40% slower). Once a chunk is not valid UTF-8,
 * `invalid` is set before the parser sees that chunk, and from then on a field holding U+FFFD is
 * refused as bytes that are not UTF-8. A file that is valid UTF-8 throughout never sets it, so a
 * U+FFFD written in the legacy data itself goes through as text.
 */
class Utf8Watch extends Transform {
  invalid = false;
  private carry: Buffer = Buffer.alloc(0);

  constructor(private readonly checking: boolean) { super(); }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.checking && !this.invalid) {
      const bytes = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
      const end = completeEnd(bytes);
      if (!isUtf8(bytes.subarray(0, end))) this.invalid = true;
      this.carry = Buffer.from(bytes.subarray(end));
    }
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.carry.length > 0) this.invalid = true; // the file ends inside a character
    done();
  }
}

/** Where the last complete UTF-8 character of `bytes` ends: a character cut by the chunk's end waits for the next chunk. */
function completeEnd(bytes: Buffer): number {
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 4); i--) {
    const byte = bytes[i]!;
    if (byte < 0x80) return bytes.length;
    if (byte >= 0xc0) return bytes.length - i < (byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2) ? i : bytes.length;
  }
  return bytes.length;
}

/** The file's bytes after a UTF-8 byte-order mark, if it has one (by hand: a pass that starts again mid-file must not look for one). */
async function input(path: string) {
  const file = await open(path);
  const head = Buffer.alloc(3);
  try { await file.read(head, 0, 3, 0); } finally { await file.close(); }
  return createReadStream(path, { start: head.equals(Buffer.from([0xef, 0xbb, 0xbf])) ? 3 : 0 });
}

/** The first line at or after `from` that is not blank (where a row begins), and the byte after it. */
async function lineWithText(path: string, from: number): Promise<{ line: number; next: number } | undefined> {
  let line = 1;
  let offset = 0;
  let text = false;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === 0x0a) {
        if (line >= from && text) return { line, next: offset + i + 1 };
        line++;
        text = false;
      } else if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) text = true;
    }
    offset += chunk.length;
  }
  return undefined;
}
