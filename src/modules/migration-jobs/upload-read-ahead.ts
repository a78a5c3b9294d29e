import type { Readable } from 'node:stream';

// A stream's own async iterator drops what the stream had buffered once it fails: a request whose
// client closed the connection, or a gunzip stream ended by that cut, lose the complete lines they
// already held, and the upload cannot keep them. Reading through `readAhead`
// keeps every chunk the stream gave before it failed, then reports the failure.
//
// It listens from the moment it is called (not from the first read), so chunks that arrive while the
// upload is still looking up its job are kept too, up to `limitBytes` held before the stream is
// paused (back-pressure, as a stream's own buffer would give).

/** The client closed the connection before the end of its upload (Node's "aborted"). */
export class UploadCutOff extends Error {
  constructor(cause: Error) {
    super('the client closed the connection before the end of its upload', { cause });
    this.name = 'UploadCutOff';
  }
}

const READ_AHEAD_BYTES = 1024 * 1024;

export function readAhead(stream: Readable, limitBytes = READ_AHEAD_BYTES): AsyncIterable<Buffer> {
  const held: Buffer[] = [];
  let heldBytes = 0;
  let ended = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const woken = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  const onData = (chunk: Buffer) => {
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes >= limitBytes) stream.pause();
    woken();
  };
  const onEnd = () => {
    ended = true;
    woken();
  };
  const onError = (error: Error) => {
    failure ??= isAbort(error) ? new UploadCutOff(error) : error;
    woken();
  };
  stream.on('data', onData);
  stream.once('end', onEnd);
  stream.on('error', onError);
  return {
    async *[Symbol.asyncIterator]() {
      try {
        for (;;) {
          const chunk = held.shift();
          if (chunk) {
            heldBytes -= chunk.length;
            if (heldBytes < limitBytes && stream.isPaused() && !stream.destroyed) stream.resume();
            yield chunk;
            continue;
          }
          if (failure) throw failure;
          if (ended) return;
          await new Promise<void>((resolve) => { wake = resolve; });
        }
      } finally {
        stream.off('data', onData);
        stream.off('end', onEnd);
        // Still listened to: a failure after the reader stopped is not an unhandled error.
        stream.off('error', onError);
        stream.on('error', () => {});
      }
    },
  };
}

function isAbort(error: Error): boolean {
  return (error as { code?: string }).code === 'ECONNRESET' || error.message === 'aborted';
}
