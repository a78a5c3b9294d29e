import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { open } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import { parse, type CsvError, type Options } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import type { RejectReason } from './transforms.ts';

// Reading a legacy CSV file with csv-parse: the header, then each row projected on the columns the
// mapping uses. A row that cannot be read (a field count other than the header's, bytes that are
// not in the file's encoding, a stray quote, a quote never closed) comes out with its problem and its
// account number, so its account takes its children with it. One broken line never stops a
// conversion, and never takes the rows after it.

export interface CsvOptions { delimiter?: string; quote?: string; encoding?: 'utf8' | 'latin1' | 'windows-1252' }

/** Why a row cannot be used, found while reading it. */
export interface RowFault { column: string; reason: RejectReason; detail: string }

/**
 * A row of a file: its line in the file (the header is line 1, a row spanning lines is at its last),
 * its join key (the first value, as the caller normalises it) and the projected values, key first.
 */
export interface Row { line: number; key: string; values: string[]; fault?: RowFault }

const parserOptions = (csv: CsvOptions): Options => ({
  delimiter: csv.delimiter ?? ',', quote: csv.quote ?? '"',
  // csv-parse decodes each field, and turns bytes that are not UTF-8 into U+FFFD: Utf8Watch tells
  // such a field from one that holds U+FFFD itself, so a Latin-1 export read as UTF-8 is refused.
  // Windows-1252 is read as Latin-1, byte for character, and its 0x80-0x9F mapped after (singleByte).
  encoding: byteEncoding(csv),
  // Both line endings, mixed in one file too (an export concatenated from two systems): a file's
  // first line does not decide, so no row keeps a '\r' and none is merged with the next.
  record_delimiter: ['\r\n', '\n'],
  // The field count is checked here against the header, not against a pass's first row.
  relax_column_count: true,
  // A line of spaces, or of delimiters only (a spreadsheet's trailing ",,,"), is blank too: no row.
  skip_empty_lines: true, skip_records_with_empty_values: true, skip_records_with_error: true,
});

/** A data file that cannot be read as rows at all: empty, or its lines ending in CR alone. */
export class UnreadableFile extends Error {
  constructor(path: string, why = `is empty: it needs at least its header line`) { super(`the data file ${path} ${why}`); }
}

/** The header's names, trimmed; an UnreadableFile for a file with no line at all, or whose lines end in CR alone. */
export async function readHeader(path: string, csv: CsvOptions): Promise<string[]> {
  const parser = createReadStream(path, { start: await bomLength(path) }).pipe(parse({ ...parserOptions(csv), to: 1 }));
  for await (const record of parser) {
    // Lines end in LF or CRLF; a file whose lines end in CR alone (an old Mac export) reads as one
    // line, its header running on into its rows: said as such rather than as columns not found.
    if ((record as string[]).some((name) => /\r(?!$)/.test(name))) {
      parser.destroy();
      throw new UnreadableFile(path, 'has lines that end in CR alone (an old Mac export): convert its line ends to LF or CRLF');
    }
    return (record as string[]).map((name) => name.trim());
  }
  throw new UnreadableFile(path);
}

/** The columns a row is projected on (names for the rejects, positions in the header), and how the key is normalised for the join. */
export interface Projection { columns: string[]; positions: number[]; keyOf?: ((raw: string) => string) | undefined }

export async function* csvRows(path: string, csv: CsvOptions, projection: Projection): AsyncGenerator<Row> {
  const width = (await readHeader(path, csv)).length;
  let start: Start = { line: 0, byte: await bomLength(path), header: true };
  for (;;) {
    const broken = yield* pass(path, csv, projection, width, start);
    if (broken === undefined) return;
    // csv-parse skips a row it cannot read, but not always cleanly: after text that follows a
    // closing quote it goes on reading as if the quote were still open, and a quote never closed
    // swallows the rest of the file. So the pass stops there; the broken row comes out with its
    // problem, and the next pass starts on the line after it (after the line the quote opened on,
    // for a quote never closed), so the rows after it are read.
    const found = await brokenRow(path, csv, projection, broken);
    if (!found) return;
    yield found.row;
    if (found.next === undefined) return;
    start = { ...found.next, header: false };
  }
}

/** Where a pass starts: after `line` lines, at `byte`, on the header line or not. */
interface Start { line: number; byte: number; header: boolean }

/** A row csv-parse could not read: where it starts (the byte after the last row read, and that row's line), the line of the problem, and what it is. */
interface Broken { fromByte: number; afterLine: number; errorLine: number; unclosed: boolean; detail: string }

/** One parse from `start`, up to the first row it cannot read (returned) or the file's end (undefined). */
async function* pass(path: string, csv: CsvOptions, projection: Projection, width: number, start: Start): AsyncGenerator<Row, Broken | undefined> {
  const { columns, positions } = projection;
  const parser = parse(parserOptions(csv));
  const stream = createReadStream(path, { start: start.byte });
  const watch = new Utf8Watch(byteEncoding(csv) === 'utf8');
  const single = singleByte(csv);
  // Where the last row read ends (its line, and the byte after it): where a broken one begins, blank lines aside.
  let lastLine = start.line;
  let lastEnd = 0;
  let broken: Broken | undefined;
  parser.on('skip', (error: CsvError & { lines?: number }) => {
    if (broken) return;
    broken = {
      fromByte: start.byte + lastEnd, afterLine: lastLine, errorLine: start.line + (error.lines ?? 0),
      unclosed: error.code === 'CSV_QUOTE_NOT_CLOSED', detail: readError(error),
    };
    // Nothing more is read in this pass; what the parser holds still passes through, and is dropped.
    watch.unpipe(parser);
    stream.destroy();
    parser.end();
  });
  // The row's line is read from the parser as it hands the record on (its `info` option costs a
  // copy of the parser's state per record, a quarter of the parsing time); the projection is made
  // there too, so only the columns the mapping uses are kept.
  const push = parser.push.bind(parser);
  let header = start.header;
  parser.push = (record: string[] | null) => {
    if (record === null) return push(null);
    if (broken) return true;
    lastLine = start.line + parser.info.lines;
    lastEnd = parser.info.bytes;
    if (header) { header = false; return true; }
    const row = projected(record, projection, lastLine, single);
    if (watch.invalid) {
      for (let i = 0; i < positions.length; i++) if (row.values[i]!.includes('\uFFFD')) row.fault ??= encodingFault(columns[i]!, row.values[i]!);
    }
    if (record.length !== width) row.fault = { column: '', reason: 'malformed_row', detail: `${record.length} fields where the header has ${width}` };
    return push(row);
  };
  stream.on('error', (error) => parser.destroy(error));
  stream.pipe(watch).pipe(parser);
  yield* parser as AsyncIterable<Row>;
  return broken;
}

/**
 * A record's values on the projection's columns, read in the file's encoding (a single-byte one's
 * 0x80-0x9F mapped, or the field's fault), and its key from them: every row, a broken one too.
 */
function projected(record: string[], { columns, positions, keyOf }: Projection, line: number, single: SingleByte | undefined): Row {
  const row: Row = { line, key: '', values: new Array<string>(positions.length) };
  for (let i = 0; i < positions.length; i++) {
    let text = record[positions[i]!] ?? '';
    if (single && C1.test(text)) {
      const read = single(text, columns[i]!);
      if (typeof read === 'string') text = read;
      else row.fault ??= read;
    }
    row.values[i] = text;
  }
  row.key = keyOf ? keyOf(row.values[0]!) : row.values[0]!;
  return row;
}

/**
 * The broken row as a row with its problem: its line (the problem's; for a quote never closed, the
 * line it opened on), and its values as its first line gives them, read leniently, so its account
 * number is known and its account's children are rejected with it. `next`: where reading goes on.
 */
async function brokenRow(path: string, csv: CsvOptions, projection: Projection, broken: Broken): Promise<{ row: Row; next?: { line: number; byte: number } } | undefined> {
  let line = broken.afterLine + 1;
  let offset = broken.fromByte;
  let first: { line: number; bytes: Buffer[] } | undefined;
  let text = false;
  for await (const chunk of createReadStream(path, { start: broken.fromByte }) as AsyncIterable<Buffer>) {
    let pieceStart = 0;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      if (byte === 0x0a) {
        if (text && !first) first = { line, bytes: [chunk.subarray(pieceStart, i)] };
        else if (first && first.line === line) first.bytes.push(chunk.subarray(pieceStart, i));
        if (first && line >= (broken.unclosed ? first.line : broken.errorLine)) {
          return { row: rowOf(first, csv, projection, broken), next: { line, byte: offset + i + 1 } };
        }
        line++;
        text = false;
        pieceStart = i + 1;
      } else if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) {
        text = true;
      }
    }
    if (first && first.line === line) first.bytes.push(chunk.subarray(pieceStart));
    else if (text && !first) first = { line, bytes: [chunk.subarray(pieceStart)] };
    offset += chunk.length;
  }
  return first ? { row: rowOf(first, csv, projection, broken) } : undefined;
}

function rowOf(first: { line: number; bytes: Buffer[] }, csv: CsvOptions, projection: Projection, broken: Broken): Row {
  const text = Buffer.concat(first.bytes).toString(byteEncoding(csv)).replace(/\r$/, '');
  let fields: string[];
  try {
    fields = (parseSync(text, { delimiter: csv.delimiter ?? ',', quote: csv.quote ?? '"', relax_quotes: true, relax_column_count: true, to: 1 }) as string[][])[0] ?? [];
  } catch {
    fields = text.split(csv.delimiter ?? ',');
  }
  const line = broken.unclosed ? first.line : Math.max(broken.errorLine, first.line);
  const detail = broken.unclosed ? `a quote opened on line ${first.line} is never closed; reading goes on at line ${first.line + 1}` : broken.detail;
  return { ...projected(fields, projection, line, singleByte(csv)), fault: { column: '', reason: 'malformed_row', detail } };
}

// csv-parse's own words for a stray quote quote the field as it has read it so far; these say what to do.
const STRAY_QUOTES: Record<string, string> = {
  // csv-parse 7 names this one without its `CSV_` prefix.
  INVALID_OPENING_QUOTE: 'a quote inside a field that does not start with one',
  CSV_INVALID_OPENING_QUOTE: 'a quote inside a field that does not start with one',
  CSV_INVALID_CLOSING_QUOTE: 'text after the quote that closes a field',
};
function readError(error: CsvError & { column?: number }): string {
  const words = STRAY_QUOTES[error.code];
  return words ? `${words} (field ${(error.column ?? 0) + 1}): double a quote inside a quoted field ("")` : error.message;
}

const encodingFault = (column: string, text: string): RowFault => ({
  column, reason: 'invalid_encoding',
  detail: `${column} has bytes that are not UTF-8 (read as "${text}"); if the file is Windows-1252 (most exports from Windows) `
    + `give encoding: windows-1252 in the mapping's csv settings, if it is Latin-1 (ISO-8859-1) encoding: latin1`,
});

const byteEncoding = (csv: CsvOptions): 'utf8' | 'latin1' => (csv.encoding === undefined || csv.encoding === 'utf8' ? 'utf8' : 'latin1');

/** Bytes 0x80-0x9F, read as Latin-1: control characters in Latin-1, letters and signs in Windows-1252. */
const C1 = /[\u0080-\u009f]/;
// Windows-1252's characters for 0x80-0x9F; a space where it has none (0x81, 0x8D, 0x8F, 0x90, 0x9D).
const WINDOWS_1252 = '\u20ac \u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152 \u017d  '
  + '\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153 \u017e\u0178';

/**
 * For a single-byte encoding, what becomes of a value read as Latin-1 that holds 0x80-0x9F: in
 * Windows-1252 the value with those characters (a fault for the five bytes it leaves undefined); in
 * Latin-1 a fault, since they are control characters no legacy text holds, and the likely cause is
 * a Windows-1252 file read as Latin-1 (`O’Neil` would be stored with U+0092). Undefined for UTF-8.
 */
type SingleByte = (text: string, column: string) => string | RowFault;
function singleByte(csv: CsvOptions): SingleByte | undefined {
  if (csv.encoding === 'latin1') {
    return (text, column) => ({
      column, reason: 'invalid_encoding',
      detail: `${column} has bytes 0x80-0x9F, control characters in Latin-1 (read as ${JSON.stringify(text)}); `
        + 'an export from Windows is usually Windows-1252: give encoding: windows-1252 in the mapping\'s csv settings',
    });
  }
  if (csv.encoding !== 'windows-1252') return undefined;
  return (text, column) => {
    let read = '';
    for (const char of text) {
      const code = char.charCodeAt(0);
      const mapped = code >= 0x80 && code <= 0x9f ? WINDOWS_1252[code - 0x80]! : char;
      if (mapped === ' ' && char !== ' ') {
        return { column, reason: 'invalid_encoding', detail: `${column} has the byte 0x${code.toString(16).toUpperCase()}, which Windows-1252 does not define` };
      }
      read += mapped;
    }
    return read;
  };
}


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

/** The length of the file's UTF-8 byte-order mark: 3, or 0 when it has none. */
async function bomLength(path: string): Promise<number> {
  const file = await open(path);
  const head = Buffer.alloc(3);
  try { await file.read(head, 0, 3, 0); } finally { await file.close(); }
  return head.equals(Buffer.from([0xef, 0xbb, 0xbf])) ? 3 : 0;
}
