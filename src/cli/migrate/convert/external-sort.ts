import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

// Sorting more than fits in memory: items are gathered into chunks of a bounded size, each chunk
// is sorted and written to a run file (one line an item), and the runs are merged with a heap. Memory
// holds one chunk while sorting and one line per run while merging, whatever the number of items.

export interface SortSpec<T> {
  compare(a: T, b: T): number;
  serialize(item: T): string;
  parse(line: string): T;
  /** About how many bytes the item holds in memory. */
  size(item: T): number;
}

/** At most this many runs are merged at once; more are merged in rounds. */
const FAN_IN = 64;

export class ExternalSorter<T> {
  private chunk: T[] = [];
  private bytes = 0;
  private readonly runs: string[] = [];
  private seq = 0;

  constructor(private readonly dir: string, private readonly name: string, private readonly spec: SortSpec<T>, private readonly chunkBytes: number) {}

  async add(item: T): Promise<void> {
    this.chunk.push(item);
    this.bytes += this.spec.size(item);
    if (this.bytes >= this.chunkBytes) await this.flush();
  }

  /** The sorted items; the run files are removed once read to the end. */
  async *sorted(): AsyncGenerator<T> {
    if (this.runs.length === 0) {
      // Everything fitted in one chunk: no file at all.
      yield* this.chunk.sort((a, b) => this.spec.compare(a, b));
      return;
    }
    await this.flush();
    let runs = this.runs;
    while (runs.length > FAN_IN) {
      const next: string[] = [];
      for (let i = 0; i < runs.length; i += FAN_IN) next.push(await this.writeRun(merge(runs.slice(i, i + FAN_IN), this.spec)));
      await Promise.all(runs.map((run) => rm(run, { force: true })));
      runs = next;
    }
    yield* merge(runs, this.spec);
    await Promise.all(runs.map((run) => rm(run, { force: true })));
  }

  private async flush(): Promise<void> {
    if (this.chunk.length === 0) return;
    const items = this.chunk.sort((a, b) => this.spec.compare(a, b));
    this.chunk = [];
    this.bytes = 0;
    this.runs.push(await this.writeRun(items));
  }

  private async writeRun(items: Iterable<T> | AsyncIterable<T>): Promise<string> {
    const path = join(this.dir, `${this.name}.${++this.seq}.run`);
    const out = createWriteStream(path);
    let buffer = '';
    for await (const item of items) {
      buffer += `${this.spec.serialize(item)}\n`;
      if (buffer.length >= 1 << 20) {
        if (!out.write(buffer)) await once(out, 'drain');
        buffer = '';
      }
    }
    out.end(buffer);
    await once(out, 'finish');
    return path;
  }
}

async function* merge<T>(runs: string[], spec: SortSpec<T>): AsyncGenerator<T> {
  const readers = runs.map((run) => createInterface({ input: createReadStream(run), crlfDelay: Infinity })[Symbol.asyncIterator]());
  // A binary heap of the head item of each run; ties go to the earlier run, so the sort is stable.
  const heap: { item: T; run: number }[] = [];
  const less = (a: { item: T; run: number }, b: { item: T; run: number }) => {
    const c = spec.compare(a.item, b.item);
    return c < 0 || (c === 0 && a.run < b.run);
  };
  const push = (entry: { item: T; run: number }) => {
    heap.push(entry);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const pop = () => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  };
  for (let run = 0; run < readers.length; run++) {
    const first = await readers[run]!.next();
    if (!first.done) push({ item: spec.parse(first.value), run });
  }
  while (heap.length > 0) {
    const { item, run } = pop();
    yield item;
    const next = await readers[run]!.next();
    if (!next.done) push({ item: spec.parse(next.value), run });
  }
}
