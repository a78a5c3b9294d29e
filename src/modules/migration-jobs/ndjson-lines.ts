// Splits a byte stream into lines without holding more than one line (up to a limit) in memory:
// a line longer than `maxLineBytes` is reported as too long and its bytes are dropped as they come.
// Blank lines (only white space) are skipped. A stream that ends without a final newline still
// yields its last line; a stream that fails (a cut-off upload) does not yield the incomplete line it
// was in the middle of: the error is thrown after every complete line has been yielded.

export type Line = { kind: 'text'; text: string } | { kind: 'too_long'; bytes: number };

export class UploadLimitExceeded extends Error {}

const NEWLINE = 0x0a;

export async function* ndjsonLines(
  source: AsyncIterable<Buffer | string>, options: { maxLineBytes: number; maxTotalBytes: number },
): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let size = 0;
  let overflow = false;
  let total = 0;
  const finish = (): Line | null => {
    const line: Line | null = overflow
      ? { kind: 'too_long', bytes: size }
      : blank(parts) ? null : { kind: 'text', text: Buffer.concat(parts).toString('utf8') };
    parts = [];
    size = 0;
    overflow = false;
    return line;
  };
  for await (const raw of source) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
    total += chunk.length;
    if (total > options.maxTotalBytes) throw new UploadLimitExceeded(`the upload exceeds ${options.maxTotalBytes} bytes`);
    let start = 0;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, start)) {
      take(chunk.subarray(start, at));
      const line = finish();
      if (line) yield line;
      start = at + 1;
    }
    take(chunk.subarray(start));
  }
  const last = finish();
  if (last) yield last;

  function take(piece: Buffer): void {
    if (piece.length === 0) return;
    size += piece.length;
    if (overflow) return;
    if (size > options.maxLineBytes) {
      overflow = true;
      parts = [];
      return;
    }
    parts.push(piece);
  }
}

function blank(parts: Buffer[]): boolean {
  for (const part of parts) {
    for (const byte of part) {
      if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
    }
  }
  return true;
}
