import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createGzip, type Gzip } from 'node:zlib';
import { csvCell } from '../../../core/csv.ts';
import type { Reject } from './record-builder.ts';

// The two outputs of a conversion: the book (one JSON line a record, gzip when the name ends .gz)
// and the rejects file (CSV: file, row, key, column, reason, detail). The rejects file quotes the
// legacy system's text as the service's own CSVs do (core/csv.ts): it is opened in a spreadsheet.

const BUFFER = 1 << 20;

export class LineWriter {
  private readonly file: WriteStream;
  private readonly gzip: Gzip | undefined;
  private buffer = '';
  private failure: Error | undefined;

  constructor(path: string) {
    this.file = createWriteStream(path);
    if (path.endsWith('.gz')) {
      this.gzip = createGzip();
      this.gzip.pipe(this.file);
    }
    // A write error (a full disk) is kept and thrown by the next write or the close.
    for (const stream of [this.gzip, this.file]) stream?.on('error', (error: Error) => { this.failure ??= error; });
  }

  async write(line: string): Promise<void> {
    this.buffer += `${line}\n`;
    if (this.buffer.length >= BUFFER) await this.flush();
  }

  async close(): Promise<void> {
    await this.flush();
    (this.gzip ?? this.file).end();
    if (!this.file.closed) await once(this.file, 'close');
    if (this.failure) throw this.failure;
  }

  /** Abandons the file (a pass that starts again rewrites it): a write still in flight must not throw. */
  destroy(): void {
    this.gzip?.destroy();
    this.file.destroy();
  }

  private async flush(): Promise<void> {
    if (this.failure) throw this.failure;
    const sink = this.gzip ?? this.file;
    const text = this.buffer;
    this.buffer = '';
    if (text && !sink.write(text)) await once(sink, 'drain');
  }
}

export class RejectsWriter {
  private readonly out: LineWriter;
  private pending: Promise<void> = Promise.resolve();
  count = 0;
  readonly byReason: Record<string, number> = {};

  constructor(path: string) {
    this.out = new LineWriter(path);
    this.pending = this.out.write('file,row,key,column,reason,detail');
  }

  /** Synchronous for its callers (csv-parse reports a skipped row from an event): writes are chained. */
  add(r: Reject): void {
    this.count++;
    this.byReason[r.reason] = (this.byReason[r.reason] ?? 0) + 1;
    const line = [r.file.name, r.row, r.key, r.column, r.reason, r.detail].map(csvCell).join(',');
    this.pending = this.pending.then(() => this.out.write(line));
  }

  async close(): Promise<void> {
    await this.pending;
    await this.out.close();
  }

  destroy(): void { this.out.destroy(); }
}
