// A records upload has no whole-request deadline (a million lines on a slow link take as long as they
// take); a client that stops sending is cut off instead, once no byte has arrived for the idle limit.
// Only time spent waiting on the client counts: while the reader is busy (writing a batch to the
// store) nothing is asked of the client, and the clock is stopped, so a slow store never looks like
// a stalled client. On a stall the source is left as it is (not destroyed): destroying a request
// destroys its socket, and the answer (a 408 saying what was kept) could not be sent.

export class UploadStalled extends Error {
  constructor(readonly idleMs: number) {
    super(`no data arrived for ${idleMs} ms`);
    this.name = 'UploadStalled';
  }
}

export async function* idleLimited<T>(source: AsyncIterable<T>, idleMs: number): AsyncGenerator<T> {
  const chunks = source[Symbol.asyncIterator]();
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UploadStalled(idleMs)), idleMs);
    });
    let next: IteratorResult<T>;
    try {
      next = await Promise.race([chunks.next(), stalled]);
    } finally {
      clearTimeout(timer);
    }
    if (next.done) return;
    yield next.value;
  }
}
