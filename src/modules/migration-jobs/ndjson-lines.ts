import { isUtf8 } from 'node:buffer';
import { withoutByteOrderMark } from '../../core/byte-order-mark.ts';

// Splits a byte stream into lines without holding more than one line (up to a limit) in memory:
// a line longer than `maxLineBytes` is reported as too long and its bytes are dropped as they come.
// A line that is not valid UTF-8 is reported as such, never decoded with U+FFFD in place of its bytes.
// Blank lines (only white space) are skipped, but counted: blank lines cost a scan and no storage, so
// a small gzip of newlines could otherwise keep a core busy for minutes; past `maxBlankLines` the
// upload stops. An empty line is skipped without copying or decoding anything. A stream that ends
// without a final newline still yields its last line; a stream that fails (a cut-off upload) does
// not yield the incomplete line it was in the middle of: the error is thrown after every complete
// line has been yielded.
//
// A UTF-8 byte order mark at the very start of the stream (as spreadsheet tools and some legacy
// exports write) is not part of the first line: it is dropped, unhashed.
//
// `onLineBytes` sees the bytes of every line that is yielded, then its newline, in order (the job's
// upload hash): a line's bytes as they are dropped when it is too long, the others when it ends. It
// is called before the line is yielded and never for a blank line; the bytes of a too-long line cut
// off by the end of a failing stream have been seen although no line is yielded for them.

export type Line = { kind: 'text'; text: string } | { kind: 'too_long'; bytes: number; limit: number } | { kind: 'not_utf8' };

/** The upload passed one of its bounds: its bytes (after gunzip), or its blank lines. */
export class UploadLimitExceeded extends Error {
  constructor(readonly bound: 'bytes' | 'blank_lines') {
    super(`the upload exceeds its ${bound === 'bytes' ? 'bytes' : 'blank lines'}`);
  }
}

interface LineLimits { maxLineBytes: number; maxTotalBytes: number; maxBlankLines: number }

const NEWLINE = 0x0a;

const LF = Buffer.from('\n');
const ignore = (): void => undefined;

export async function* ndjsonLines(
  source: AsyncIterable<Buffer | string>, limits: LineLimits, onLineBytes: (bytes: Uint8Array) => void = ignore,
): AsyncGenerator<Line> {
  let parts: Buffer[] = [];
  let size = 0;
  let overflow = false;
  let total = 0;
  let blankLines = 0;
  const skipBlank = () => {
    blankLines += 1;
    if (blankLines > limits.maxBlankLines) throw new UploadLimitExceeded('blank_lines');
  };
  const finish = (): Line | null => {
    const line = lineOf(parts, size, overflow, limits.maxLineBytes);
    if (line) {
      if (!overflow) for (const part of parts) onLineBytes(part);
      onLineBytes(LF);
    }
    parts = [];
    size = 0;
    overflow = false;
    if (!line) skipBlank();
    return line;
  };
  for await (const raw of withoutByteOrderMark(source)) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
    total += chunk.length;
    if (total > limits.maxTotalBytes) throw new UploadLimitExceeded('bytes');
    let start = 0;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, start)) {
      if (at === start && size === 0) {
        skipBlank();
      } else {
        take(chunk.subarray(start, at));
        const line = finish();
        if (line) yield line;
      }
      start = at + 1;
    }
    take(chunk.subarray(start));
  }
  if (size > 0) {
    const last = finish();
    if (last) yield last;
  }

  function take(piece: Buffer): void {
    if (piece.length === 0) return;
    size += piece.length;
    if (overflow) {
      onLineBytes(piece);
      return;
    }
    if (size > limits.maxLineBytes) {
      overflow = true;
      for (const part of parts) onLineBytes(part);
      onLineBytes(piece);
      parts = [];
      return;
    }
    parts.push(piece);
  }
}

/** The line held in `parts`, or null for a blank one. */
function lineOf(parts: Buffer[], size: number, overflow: boolean, limit: number): Line | null {
  if (overflow) return { kind: 'too_long', bytes: size, limit };
  if (blank(parts)) return null;
  const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
  return isUtf8(bytes) ? { kind: 'text', text: bytes.toString('utf8') } : { kind: 'not_utf8' };
}

function blank(parts: Buffer[]): boolean {
  for (const part of parts) {
    for (let i = 0; i < part.length; i += 1) {
      const byte = part[i];
      if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
    }
  }
  return true;
}

