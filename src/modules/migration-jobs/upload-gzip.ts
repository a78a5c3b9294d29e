import { pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { readAhead } from './upload-read-ahead.ts';

// A records upload sent with Content-Encoding: gzip, inflated as it arrives. Bytes that are not gzip,
// or a gzip stream that ends before its trailer (an upload cut short), are the client's fault: they
// surface as UploadNotGzip, which the service answers with a 400 saying how many lines it kept.

export class UploadNotGzip extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause });
    this.name = 'UploadNotGzip';
  }
}

export async function* gunzipped(source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  // pipeline passes a failure of the request (a cut, a stall) on to the gunzip stream read here.
  const inflating = pipeline(source, createGunzip(), () => {});
  try {
    // Read ahead: what the gunzip stream inflated before a fault (bytes after the last member, a
    // cut) is kept, and only then the fault is reported.
    for await (const chunk of readAhead(inflating)) yield chunk;
  } catch (error) {
    throw isZlibError(error) ? new UploadNotGzip(error as Error) : error;
  }
}

// zlib's own failures carry its code: Z_DATA_ERROR (not gzip, a bad checksum), Z_BUF_ERROR (cut short).
function isZlibError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}
