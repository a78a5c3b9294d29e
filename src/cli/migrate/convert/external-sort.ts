import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

// Sorting more than fits in memory: lines of text are gathered into chunks
// of a bounded size, each chunk is sorted and written to a run file, and the runs are merged with a
// heap. Memory holds one chunk while sorting and one line per run while merging, whatever the number
// of lines. Lines are compared as strings (UTF-16 code units): callers build lines that sort as
// they need (the key first, then fixed-width numbers). One string a line, rather than an object or
// an array of fields, keeps a chunk's memory close to the size of its text. A run file holds one
// item a line, a line break or backslash inside an item escaped (a key read from a quoted CSV field
// may hold a line break); the items are compared as given, never as escaped.

/** At most this many runs are merged at once; more are merged in rounds. */
const FAN_IN = 64;

export class ExternalSorter {
  private chunk: string[] = [];
  private bytes = 0;
  private readonly runs: string[] = [];
  private seq = 0;

  constructor(private readonly dir: string, private readonly name: string, private readonly chunkBytes: number) {}

  async add(line: string): Promise<void> {
    this.chunk.push(line);
    this.bytes += 32 + line.length;
    if (this.bytes >= this.chunkBytes) await this.flush();
  }

  /** The sorted items; the run files are removed once read to the end. */
  async *sorted(): AsyncGenerator<string> {
    if (this.runs.length === 0) {
      // Everything fitted in one chunk: no file at all.
      yield* this.chunk.sort();
      return;
    }
    await this.flush();
    let runs = this.runs;
    while (runs.length > FAN_IN) {
      const next: string[] = [];
      for (let i = 0; i < runs.length; i += FAN_IN) next.push(await this.writeRun(merge(runs.slice(i, i + FAN_IN))));
      await Promise.all(runs.map((run) => rm(run, { force: true })));
      runs = next;
    }
    yield* merge(runs);
    await Promise.all(runs.map((run) => rm(run, { force: true })));
  }

  private async flush(): Promise<void> {
    if (this.chunk.length === 0) return;
    const items = this.chunk.sort();
    this.chunk = [];
    this.bytes = 0;
    this.runs.push(await this.writeRun(items));
  }

  private async writeRun(items: Iterable<string> | AsyncIterable<string>): Promise<string> {
    const path = join(this.dir, `${this.name}.${++this.seq}.run`);
    const out = createWriteStream(path);
    let buffer = '';
    for await (const item of items) {
      buffer += `${escape(item)}\n`;
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

async function* merge(runs: string[]): AsyncGenerator<string> {
  const readers = runs.map((run) => runLines(run)[Symbol.asyncIterator]());
  // A binary heap of the head item of each run; ties go to the earlier run, so the sort is stable.
  const heap: { item: string; run: number }[] = [];
  const less = (a: { item: string; run: number }, b: { item: string; run: number }) => a.item < b.item || (a.item === b.item && a.run < b.run);
  const push = (entry: { item: string; run: number }) => {
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
    if (!first.done) push({ item: first.value, run });
  }
  while (heap.length > 0) {
    const { item, run } = pop();
    yield item;
    const next = await readers[run]!.next();
    if (!next.done) push({ item: next.value, run });
  }
}

/**
 * The lines of a run file, read as they are consumed. (readline's async iterator reads ahead without
 * bound: merging runs with it holds most of them in memory.)
 */
async function* runLines(path: string): AsyncGenerator<string> {
  let rest = '';
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 64 * 1024 }) as AsyncIterable<string>) {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) yield unescape(line);
  }
  if (rest) yield unescape(rest);
}

const escape = (item: string) => (item.includes('\n') || item.includes('\\') ? item.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\')) : item);
const unescape = (line: string) => (line.includes('\\') ? line.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c)) : line);
