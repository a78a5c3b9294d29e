import { Transform, type TransformCallback } from 'node:stream';
import { open } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import type { RejectReason } from './transforms.ts';

/** How a legacy CSV file is written: its delimiter, quote and encoding. */
export interface CsvOptions { delimiter?: string; quote?: string; encoding?: 'utf8' | 'latin1' | 'windows-1252' }

/** Why a row cannot be used, found while reading it. */
export interface RowFault { column: string; reason: RejectReason; detail: string }

// A legacy file's encoding as the CSV reader meets it: UTF-8 (checked on the way, whole chunks at a
// time), Latin-1 or Windows-1252 (read byte for character), and the faults of a row whose bytes are
// not in the file's encoding.

export const encodingFault = (column: string, text: string): RowFault => ({
  column, reason: 'invalid_encoding',
  detail: `${column} has bytes that are not UTF-8 (read as "${text}"); if the file is Windows-1252 (most exports from Windows) `
    + `give encoding: windows-1252 in the mapping's csv settings, if it is Latin-1 (ISO-8859-1) encoding: latin1`,
});

export const byteEncoding = (csv: CsvOptions): 'utf8' | 'latin1' => (csv.encoding === undefined || csv.encoding === 'utf8' ? 'utf8' : 'latin1');

/** Bytes 0x80-0x9F, read as Latin-1: control characters in Latin-1, letters and signs in Windows-1252. */
export const C1 = /[\u0080-\u009f]/;
// Windows-1252's characters for 0x80-0x9F; a space where it has none (0x81, 0x8D, 0x8F, 0x90, 0x9D).
const WINDOWS_1252 = '\u20ac \u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152 \u017d  '
  + '\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153 \u017e\u0178';

/**
 * For a single-byte encoding, what becomes of a value read as Latin-1 that holds 0x80-0x9F: in
 * Windows-1252 the value with those characters (a fault for the five bytes it leaves undefined); in
 * Latin-1 a fault, since they are control characters no legacy text holds, and the likely cause is
 * a Windows-1252 file read as Latin-1 (`O’Neil` would be stored with U+0092). Undefined for UTF-8.
 */
export type SingleByte = (text: string, column: string) => string | RowFault;
export function singleByte(csv: CsvOptions): SingleByte | undefined {
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
export class Utf8Watch extends Transform {
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
export async function bomLength(path: string): Promise<number> {
  const file = await open(path);
  const head = Buffer.alloc(3);
  try { await file.read(head, 0, 3, 0); } finally { await file.close(); }
  return head.equals(Buffer.from([0xef, 0xbb, 0xbf])) ? 3 : 0;
}
