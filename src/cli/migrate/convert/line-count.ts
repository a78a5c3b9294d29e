import { Transform, type TransformCallback } from 'node:stream';

// A row's line, as the rejects file gives it: lines end in LF, so a CRLF is one line end and a CR
// alone none. csv-parse's own count (`info.lines`) takes every CR for a line end, and a CRLF inside
// quotes for two, so one note exported from Windows with line breaks moved every later row's number.

/**
 * Passes a file's bytes on to the parser unchanged, keeping those not yet counted; `lineAt` counts
 * the LFs up to where the parser has got (its `info.bytes`) with Buffer.indexOf, so the count costs
 * nothing per field.
 */
export class LineCount extends Transform {
  private readonly chunks: Buffer[] = [];
  /** Where chunks[0] starts in the stream, and how far its LFs are counted. */
  private chunkStart = 0;
  private counted = 0;
  private lfs = 0;
  private endsLine = true;

  /** `before`: the lines of the file before the stream's first byte. */
  constructor(private readonly before: number) { super(); }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.chunks.push(chunk);
    done(null, chunk);
  }

  /** The line of a row whose bytes end at `end` in the stream: its line end included, or none at the file's end. */
  lineAt(end: number): number {
    while (this.counted < end && this.chunks.length > 0) {
      const chunk = this.chunks[0]!;
      const to = Math.min(chunk.length, end - this.chunkStart);
      for (let i = chunk.indexOf(0x0a, this.counted - this.chunkStart); i !== -1 && i < to; i = chunk.indexOf(0x0a, i + 1)) this.lfs++;
      this.endsLine = chunk[to - 1] === 0x0a;
      this.counted = this.chunkStart + to;
      if (to === chunk.length) {
        this.chunks.shift();
        this.chunkStart += chunk.length;
      }
    }
    return this.before + this.lfs + (this.endsLine ? 0 : 1);
  }
}
