import { createReadStream } from 'node:fs';
import { parse, type CsvError, type Options } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import { bomLength, byteEncoding, C1, encodingFault, singleByte, Utf8Watch, type CsvOptions, type RowFault, type SingleByte } from './csv-encoding.ts';
import { LineCount } from './line-count.ts';

// Reading a legacy CSV file with csv-parse: the header, then each row projected on the columns the
// mapping uses. A row that cannot be read (a field count other than the header's, bytes that are
// not in the file's encoding, a stray quote, a quote never closed) comes out with its problem and its
// account number, so its account takes its children with it. One broken line never stops a
// conversion, and never takes the rows after it.

/**
 * A row of a file: its line in the file (the header is line 1; lines end in LF or CRLF; a row spanning
 * lines is at its last, one that cannot be read at its first), its join key (the first value, as the
 * caller normalises it) and the projected values, key first.
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
  const bom = await bomLength(path);
  // A UTF-8 byte order mark says the file is UTF-8: read in a single-byte encoding, every accented
  // letter would turn into two or three others, with nothing refused.
  if (bom > 0 && byteEncoding(csv) !== 'utf8') {
    throw new UnreadableFile(path, `starts with a UTF-8 byte order mark, so it is UTF-8, but the mapping gives encoding: ${csv.encoding}: `
      + 'leave encoding out (UTF-8 is the default)');
  }
  // A header that cannot be read is the file's fault, said so: skipped as a broken row would be, the
  // next line would be taken for the header, and read again as a row.
  const parser = createReadStream(path, { start: bom }).pipe(parse({ ...parserOptions(csv), skip_records_with_error: false, to: 1 }));
  try {
    for await (const record of parser) {
      // Lines end in LF or CRLF; a file whose lines end in CR alone (an old Mac export) reads as one
      // line, its header running on into its rows: said as such rather than as columns not found.
      if ((record as string[]).some((name) => /\r(?!$)/.test(name))) {
        parser.destroy();
        throw new UnreadableFile(path, 'has lines that end in CR alone (an old Mac export): convert its line ends to LF or CRLF');
      }
      return (record as string[]).map((name) => name.trim());
    }
  } catch (error) {
    if (error instanceof UnreadableFile || !isCsvError(error)) throw error;
    const { what, fix } = readError(error);
    throw new UnreadableFile(path, `has a header line that cannot be read as CSV: ${what}${fix ? `: ${fix}` : ''}`);
  }
  throw new UnreadableFile(path);
}

/** The columns a row is projected on (names for the rejects, positions in the header), and how the key is normalised for the join. */
export interface Projection { columns: string[]; positions: number[]; keyOf?: ((raw: string) => string) | undefined }

export async function* csvRows(path: string, csv: CsvOptions, projection: Projection): AsyncGenerator<Row> {
  const width = (await readHeader(path, csv)).length;
  let start: Start = { line: 0, byte: await bomLength(path), header: true };
  // The lines a broken row ran over (a quote left open to a later line): what reads as rows there may
  // be that row's own text, a multi-line value, so it is rejected with it, never taken unchecked.
  let inside: { from: number; through: number } | undefined;
  for (;;) {
    const rows = pass(path, csv, projection, width, start);
    let next = await rows.next();
    for (; !next.done; next = await rows.next()) {
      const row = next.value;
      if (inside && row.line <= inside.through && !row.fault) {
        row.fault = { column: '', reason: 'malformed_row', detail: `read inside the row starting on line ${inside.from}, which could not be read `
          + `(a quote left open ran it on to line ${inside.through}): it may be that row's own text, so it is not taken; check it against the file` };
      }
      yield row;
    }
    const broken = next.value;
    if (broken === undefined) return;
    // csv-parse skips a row it cannot read, but not always cleanly: a stray quote can leave a quote
    // open, so it reads on over the line ends to a later quote and reports the problem there, and a
    // quote never closed swallows the rest of the file. So the pass stops there; the broken row comes
    // out at its first line with its problem, and the next pass starts on the line after that first
    // line: every line of the file ends up in the book or in the rejects.
    const found = await brokenRow(path, csv, projection, broken);
    if (!found) return;
    if (found.ranTo !== undefined && found.ranTo > found.row.line) inside = { from: found.row.line, through: found.ranTo };
    yield found.row;
    if (found.next === undefined) return;
    start = { ...found.next, header: false };
  }
}

/** Where a pass starts: after `line` lines, at `byte`, on the header line or not. */
interface Start { line: number; byte: number; header: boolean }

/** A row csv-parse could not read: where it starts (the byte after the last row read, and that row's line), and what its problem is. */
interface Broken { fromByte: number; afterLine: number; unclosed: boolean; problem: Problem }

/** One parse from `start`, up to the first row it cannot read (returned) or the file's end (undefined). */
async function* pass(path: string, csv: CsvOptions, projection: Projection, width: number, start: Start): AsyncGenerator<Row, Broken | undefined> {
  const { columns, positions } = projection;
  const parser = parse(parserOptions(csv));
  const stream = createReadStream(path, { start: start.byte });
  const watch = new Utf8Watch(byteEncoding(csv) === 'utf8');
  const lines = new LineCount(start.line);
  const single = singleByte(csv);
  // Where the last row read ends (its line, and the byte after it): where a broken one begins, blank lines aside.
  let lastLine = start.line;
  let lastEnd = 0;
  let broken: Broken | undefined;
  parser.on('skip', (error: CsvError) => {
    if (broken) return;
    broken = { fromByte: start.byte + lastEnd, afterLine: lastLine, unclosed: error.code === 'CSV_QUOTE_NOT_CLOSED', problem: readError(error) };
    // Nothing more is read in this pass; what the parser holds still passes through, and is dropped.
    lines.unpipe(parser);
    stream.destroy();
    parser.end();
  });
  // The row's line is found as the parser hands the record on, from the bytes it has consumed (its
  // `info` option costs a copy of the parser's state per record, a quarter of the parsing time, and
  // its line count takes a CR for a line end); the projection is made there too, so only the columns
  // the mapping uses are kept.
  const push = parser.push.bind(parser);
  let header = start.header;
  parser.push = (record: string[] | null) => {
    if (record === null) return push(null);
    if (broken) return true;
    lastEnd = parser.info.bytes;
    lastLine = lines.lineAt(lastEnd);
    if (header) { header = false; return true; }
    const row = projected(record, projection, lastLine, single);
    if (watch.invalid) {
      for (let i = 0; i < positions.length; i++) if (row.values[i]!.includes('\uFFFD')) row.fault ??= encodingFault(columns[i]!, row.values[i]!);
    }
    if (record.length !== width) row.fault = { column: '', reason: 'malformed_row', detail: fieldCount(record, width, csv.delimiter ?? ',') };
    return push(row);
  };
  stream.on('error', (error) => parser.destroy(error));
  stream.pipe(watch).pipe(lines).pipe(parser);
  yield* parser as AsyncIterable<Row>;
  return broken;
}

/**
 * Why a row has more or fewer fields than the header. Only LF and CRLF end a line, so a CR alone
 * (an export from two systems, or an old Mac's line end inside a Windows file) leaves the next line
 * in this row: said as such, quoting the start of the text it took in, so that row is not lost unnamed.
 */
function fieldCount(record: string[], width: number, delimiter: string): string {
  const count = `${record.length} fields where the header has ${width}`;
  const at = record.findIndex((field) => LONE_CR.test(field));
  if (at < 0) return count;
  const after = [record[at]!.slice(record[at]!.search(LONE_CR) + 1), ...record.slice(at + 1)].join(delimiter);
  const quoted = after.length > QUOTED ? `${after.slice(0, QUOTED)}…` : after;
  return `${count}: a CR alone (not a line end) is in the row, so the text after it ("${quoted}") was read as part of this row`;
}
const LONE_CR = /\r(?!\n)/;
const QUOTED = 20;

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
 * The broken row as a row with its problem, at its first line (the first after the last row read
 * that holds a value), and its values as that line gives them, read leniently, so its account number
 * is known and its account's children are rejected with it. `next`: where reading goes on, the line
 * after that first line, whatever line csv-parse found the problem on.
 */
async function brokenRow(path: string, csv: CsvOptions, projection: Projection, broken: Broken): Promise<{ row: Row; ranTo?: number; next?: { line: number; byte: number } } | undefined> {
  const first = await firstLine(path, csv, broken);
  if (!first) return undefined;
  const resume = `reading goes on at line ${first.line + 1}`;
  let detail: string;
  let problemAt: number | undefined;
  if (broken.unclosed) detail = `a quote opened on line ${first.line} is never closed; ${resume}`;
  else {
    problemAt = first.line + await linesToProblem(path, csv, first.byte);
    const { what, fix } = broken.problem;
    detail = problemAt === first.line ? [what, fix].filter(Boolean).join(': ')
      : `${what} found on line ${problemAt}, in a row starting on line ${first.line} (a quote left open ran it on): ${fix ? `${fix}; ` : ''}${resume}`;
  }
  const row = { ...projected(lenientFields(first.text, csv), projection, first.line, singleByte(csv)), fault: { column: '', reason: 'malformed_row' as const, detail } };
  return first.next === undefined ? { row, ranTo: problemAt } : { row, ranTo: problemAt, next: { line: first.line, byte: first.next } };
}

/** The first line from the broken row's start that is not blank as the parser sees blank: its line, text, first byte and the byte after its LF. */
async function firstLine(path: string, csv: CsvOptions, broken: Broken): Promise<{ line: number; text: string; byte: number; next?: number } | undefined> {
  let line = broken.afterLine + 1;
  let lineStart = broken.fromByte;
  let offset = broken.fromByte;
  let pieces: Buffer[] = [];
  const found = (end?: number) => {
    const text = Buffer.concat(pieces).toString(byteEncoding(csv)).replace(/\r$/, '');
    return lenientFields(text, csv).every((field) => field.trim() === '') ? undefined : { line, text, byte: lineStart, ...(end === undefined ? {} : { next: end }) };
  };
  for await (const chunk of createReadStream(path, { start: broken.fromByte }) as AsyncIterable<Buffer>) {
    let from = 0;
    for (let lf = chunk.indexOf(0x0a); lf !== -1; lf = chunk.indexOf(0x0a, from)) {
      pieces.push(chunk.subarray(from, lf));
      const first = found(offset + lf + 1);
      if (first) return first;
      line++;
      pieces = [];
      from = lf + 1;
      lineStart = offset + from;
    }
    pieces.push(chunk.subarray(from));
    offset += chunk.length;
  }
  return found();
}

/**
 * How many line ends the broken row starting at `byte` runs over before csv-parse finds its problem:
 * the row read again keeping its raw text (too costly for every row, so only for a broken one) up to
 * the problem, and its LFs counted.
 */
async function linesToProblem(path: string, csv: CsvOptions, byte: number): Promise<number> {
  const stream = createReadStream(path, { start: byte });
  const parser = parse({ ...parserOptions(csv), raw: true, to: 1 });
  let raw: string | undefined;
  parser.on('skip', (error: CsvError & { raw?: string }) => {
    // The first problem is the row's; after it the parser reads on from a state that means nothing.
    if (raw !== undefined) return;
    raw = error.raw ?? '';
    stream.unpipe(parser);
    stream.destroy();
    parser.end();
  });
  stream.pipe(parser);
  for await (const _record of parser) { /* a row read whole has no problem: none is counted */ }
  const text = raw ?? '';
  let lfs = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lfs++;
  return lfs;
}

/** A line's fields, read leniently (stray quotes kept as text, a quote left open ignored). */
function lenientFields(text: string, csv: CsvOptions): string[] {
  try {
    return (parseSync(text, { delimiter: csv.delimiter ?? ',', quote: csv.quote ?? '"', relax_quotes: true, relax_column_count: true, to: 1 }) as string[][])[0] ?? [];
  } catch {
    return text.split(csv.delimiter ?? ',');
  }
}

/** What csv-parse found wrong with a row, and what to do about it when that is known. */
interface Problem { what: string; fix?: string }

// csv-parse's own words for a stray quote quote the field as it has read it so far; these say what to do.
const STRAY_QUOTES: Record<string, string> = {
  // csv-parse 7 names this one without its `CSV_` prefix.
  INVALID_OPENING_QUOTE: 'a quote inside a field that does not start with one',
  CSV_INVALID_OPENING_QUOTE: 'a quote inside a field that does not start with one',
  CSV_INVALID_CLOSING_QUOTE: 'text after the quote that closes a field',
};
/** csv-parse's own failures: a CsvError carries a CSV_ code (one, INVALID_OPENING_QUOTE, without its prefix). */
function isCsvError(error: unknown): error is CsvError {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('CSV_') || code in STRAY_QUOTES);
}

function readError(error: CsvError & { column?: number }): Problem {
  const words = STRAY_QUOTES[error.code];
  return words ? { what: `${words} (field ${(error.column ?? 0) + 1})`, fix: 'double a quote inside a quoted field ("")' } : { what: error.message };
}
