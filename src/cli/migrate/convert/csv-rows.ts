import { createReadStream } from 'node:fs';
import { parse, type CsvError, type Options } from 'csv-parse';

// Reading a legacy CSV file with csv-parse: the header, then each row projected on the columns the
// mapping uses. A row csv-parse cannot read (a field count other than the header's, a stray quote)
// is reported and skipped, so one broken line never stops a conversion.

export interface CsvOptions { delimiter?: string; quote?: string; encoding?: 'utf8' | 'latin1' }

/** A row of a file: its line in the file (the header is line 1) and the projected values, key first. */
export interface Row { line: number; values: string[] }

const parserOptions = (csv: CsvOptions): Options => ({
  delimiter: csv.delimiter ?? ',', quote: csv.quote ?? '"', encoding: csv.encoding ?? 'utf8', bom: true,
  skip_empty_lines: true,
});

export async function readHeader(path: string, csv: CsvOptions): Promise<string[]> {
  const parser = createReadStream(path).pipe(parse({ ...parserOptions(csv), to: 1 }));
  for await (const record of parser) return (record as string[]).map((name) => name.trim());
  throw new Error('the file is empty');
}

export async function* csvRows(path: string, csv: CsvOptions, positions: number[], onMalformed: (line: number, detail: string) => void): AsyncGenerator<Row> {
  const parser = parse({ ...parserOptions(csv), skip_records_with_error: true });
  parser.on('skip', (error: CsvError & { lines?: number }) => onMalformed(error.lines ?? 0, error.message));
  // The row's line is read from the parser as it hands the record on (its `info` option costs a
  // copy of the parser's state per record, a quarter of the parsing time); the projection is made
  // there too, so only the columns the mapping uses are kept.
  const push = parser.push.bind(parser);
  parser.push = (record: string[] | null) => {
    if (record === null) return push(null);
    const values = new Array<string>(positions.length);
    for (let i = 0; i < positions.length; i++) values[i] = record[positions[i]!] ?? '';
    return push({ line: parser.info.lines, values } satisfies Row);
  };
  const input = createReadStream(path);
  input.on('error', (error) => parser.destroy(error));
  input.pipe(parser);
  let header = true;
  for await (const row of parser as AsyncIterable<Row>) {
    if (header) { header = false; continue; }
    yield row;
  }
}
