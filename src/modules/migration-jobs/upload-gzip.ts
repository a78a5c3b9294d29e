import { createGunzip, type Gunzip } from 'node:zlib';
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
  // The request's bytes are fed to gunzip by hand rather than piped: on a failure of the request (a
  // cut, a stall) a pipe destroys gunzip at once, with the bytes it was given not yet inflated, and
  // their complete lines lost. Here gunzip is ended instead, so it inflates what it has, and the
  // request's failure is reported after those lines.
  const gunzip = createGunzip();
  let requestFailure: unknown;
  const feed = async () => {
    try {
      for await (const chunk of source) {
        if (gunzip.destroyed) return;
        if (!gunzip.write(chunk)) await drainedOrClosed(gunzip);
      }
    } catch (error) {
      requestFailure = error;
    }
    if (!gunzip.destroyed) gunzip.end();
  };
  void feed();
  try {
    for await (const chunk of readAhead(gunzip)) yield chunk;
  } catch (error) {
    // A gzip stream cut short by the request's own failure is that failure, not bad gzip.
    throw requestFailure ?? (isZlibError(error) ? new UploadNotGzip(error as Error) : error);
  } finally {
    gunzip.destroy();
  }
  if (requestFailure) throw requestFailure;
}

// Back-pressure: wait until gunzip takes more, or is gone. Both listeners are removed on either, so a
// large upload, which waits thousands of times, does not pile up listeners on the stream.
function drainedOrClosed(stream: Gunzip): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

// zlib's own failures carry its code: Z_DATA_ERROR (not gzip, a bad checksum), Z_BUF_ERROR (cut short).
function isZlibError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}
