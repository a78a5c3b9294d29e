// A UTF-8 byte order mark at the very start of a stream of bytes is no content: the service drops it
// from an upload (no line holds it, and it is not hashed), and import-migrate drops it from a file it
// counts, reads or sends, so both count the same lines.

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The stream's bytes without a UTF-8 byte order mark at its very start (which may come split over chunks). */
export async function* withoutByteOrderMark(source: AsyncIterable<Buffer | string>): AsyncGenerator<Buffer> {
  let head: Buffer | null = Buffer.alloc(0);
  for await (const raw of source) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
    if (head === null) {
      yield chunk;
      continue;
    }
    head = Buffer.concat([head, chunk]);
    if (head.length < BOM.length && BOM.subarray(0, head.length).equals(head)) continue;
    const rest = head.subarray(0, BOM.length).equals(BOM) ? head.subarray(BOM.length) : head;
    head = null;
    if (rest.length > 0) yield rest;
  }
  // A stream shorter than a mark: its bytes as they are (the start of a mark is not one).
  if (head !== null && head.length > 0) yield head;
}
