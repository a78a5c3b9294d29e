import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { withoutByteOrderMark } from '../../core/byte-order-mark.ts';
import { ApiError, dataOf, isUnavailable, UnreachableError, type ApiSession } from './api-session.ts';

// Uploading a file to a job, streamed: the file is never held in memory. The job's counts.total
// says how many records the service already has (a cut upload keeps every complete line), so
// an upload always sends the non-blank lines after that many: a first upload, `--resume`, and an
// automatic retry after a dropped connection are the same code and never send a line twice.
// Stopping (Ctrl-C) ends the body after the line being sent instead of cutting the connection, so
// the service answers with the exact number of records the job holds (a cut connection leaves the
// service still writing what it had received while the client asks).
export interface UploadProgress { bytesRead: number; bytesTotal: number }
export interface UploadOutcome { received: number; total_records: number; skipped: number }

/** FILE could not be read (it went away or changed after it was checked, or its gzip is broken): exit status 2. */
export class FileReadError extends Error {
  override name = 'FileReadError';
  constructor(file: string, cause: unknown) {
    super(`cannot read ${file}: ${FileReadError.reason(cause)}`);
  }

  /** The system's reason in a few words (ENOENT: "no such file"), else its code or message. */
  static reason(error: unknown): string {
    const { code, message } = error as { code?: string; message?: string };
    const known: Record<string, string> = { ENOENT: 'no such file', EACCES: 'permission denied', EPERM: 'permission denied', EISDIR: 'it is a directory' };
    return (code && known[code]) ?? code ?? message ?? String(error);
  }
}

const NEWLINE = 0x0a;
/** A byte that makes its line a record: anything but a newline, space, tab or CR (a blank line is only those, as the service counts). */
const isContent = (byte: number) => byte !== NEWLINE && byte !== 0x20 && byte !== 0x09 && byte !== 0x0d;

export const isGzip = (file: string): boolean => file.endsWith('.gz');

/** The bytes of FILE after its first `skip` non-blank lines (blank: only spaces, tabs and CRs, as the service counts). */
export async function* linesAfter(source: AsyncIterable<Buffer>, skip: number): AsyncGenerator<Buffer> {
  let seen = 0;
  let content = false;
  for await (const chunk of source) {
    if (seen >= skip) { yield chunk; continue; }
    let at = 0;
    for (; at < chunk.length && seen < skip; at++) {
      const byte = chunk[at]!;
      if (byte === NEWLINE) {
        if (content) seen++;
        content = false;
      } else if (isContent(byte)) {
        content = true;
      }
    }
    if (seen >= skip && at < chunk.length) yield chunk.subarray(at);
  }
}

/** The bytes of `source` until `stop` is aborted, then up to and including the next newline. */
export async function* untilStopped(source: AsyncIterable<Buffer>, stop: AbortSignal): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    if (!stop.aborted) { yield chunk; continue; }
    const end = chunk.indexOf(NEWLINE);
    if (end < 0) { yield chunk; continue; }
    yield chunk.subarray(0, end + 1);
    return;
  }
}

/** Counts the non-blank lines of FILE (used to tell whether a started job lacks some of them). */
export async function countLines(file: string): Promise<number> {
  let count = 0;
  let content = false;
  for await (const chunk of fileBytes(file, () => {})) {
    for (const byte of chunk) {
      if (byte === NEWLINE) { if (content) count++; content = false; }
      else if (isContent(byte)) content = true;
    }
  }
  return content ? count + 1 : count;
}

/** Whether FILE holds a record (a line that is not blank), read no further than its first. A read error is a FileReadError. */
export async function holdsRecord(file: string): Promise<boolean> {
  for await (const chunk of fileBytes(file, () => {})) {
    if (chunk.some(isContent)) return true;
  }
  return false;
}

/**
 * The `line`th non-blank line of FILE (numbered from 1, as the service numbers a job's lines); null
 * when FILE has fewer. Reads no further than that line.
 */
export async function lineAt(file: string, line: number): Promise<string | null> {
  let parts: Buffer[] = [];
  for await (const chunk of linesAfter(fileBytes(file, () => {}), line - 1)) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); ; end = chunk.indexOf(NEWLINE, start)) {
      parts.push(chunk.subarray(start, end < 0 ? chunk.length : end));
      if (end < 0) break;
      if (parts.some((part) => part.some(isContent))) return recordText(parts);
      parts = [];
      start = end + 1;
    }
  }
  return parts.some((part) => part.some(isContent)) ? recordText(parts) : null;
}

const recordText = (parts: Buffer[]) => Buffer.concat(parts).toString('utf8');

/**
 * FILE's bytes (decompressed when gzipped), without a byte order mark at its start, as the service
 * reads an upload: every count, read and upload of the client sees the lines the service sees (a
 * mark followed by a line break is a blank line to both). A read error is a FileReadError, whoever
 * reads them.
 */
async function* fileBytes(file: string, onRead: (bytes: number) => void): AsyncGenerator<Buffer> {
  const raw = createReadStream(file);
  raw.on('data', (chunk) => onRead(chunk.length));
  const source: Readable = isGzip(file) ? raw.pipe(createGunzip()) : raw;
  // pipe() does not pass the file's errors on to gunzip: they end it here, said as they are.
  if (source !== raw) raw.on('error', (error) => source.destroy(error));
  try {
    for await (const chunk of withoutByteOrderMark(source as AsyncIterable<Buffer>)) yield chunk;
  } catch (error) {
    throw new FileReadError(file, error);
  } finally {
    raw.destroy();
  }
}

async function uploadOnce(session: ApiSession, jobId: string, file: string, skip: number, onProgress: (p: UploadProgress) => void, stop: AbortSignal) {
  const bytesTotal = (await stat(file)).size;
  let bytesRead = 0;
  const report = (bytes: number) => { bytesRead += bytes; onProgress({ bytesRead, bytesTotal }); };
  // A read error of the file reaches fetch as a failed body, which says "cannot reach the service":
  // it is kept here and said as the file's instead.
  let readError: FileReadError | null = null;
  const read = async function* () {
    try {
      yield* fileBytes(file, report);
    } catch (error) {
      readError = error as FileReadError;
      throw error;
    }
  };
  // The lines after the skip, gzipped again when the file was, to keep the transfer small (level 1:
  // the file is read as it is sent, so compressing must keep up). Always re-read, even with nothing
  // to skip, so that a stop can end the body on a line boundary.
  const rest = Readable.from(untilStopped(linesAfter(read(), skip), stop));
  const body = isGzip(file) ? rest.pipe(createGzip({ level: 1 })) : rest;
  // pipe() does not pass the error on: without this the gzip would wait for the rest forever.
  if (body !== rest) rest.on('error', (error) => body.destroy(error));
  let result: unknown;
  try {
    result = await session.client.POST('/v1/data-import/migration-jobs/{job_id}/records/', {
      params: { path: { job_id: jobId } },
      body: Readable.toWeb(body) as unknown as string,
      bodySerializer: (value: unknown) => value,
      headers: { 'content-type': 'application/x-ndjson', ...(isGzip(file) ? { 'content-encoding': 'gzip' } : {}) },
      fetch: session.sendOnce,
      duplex: 'half',
    } as never);
  } catch (error) {
    throw readError ?? error;
  } finally {
    body.destroy();
  }
  if (readError) throw readError;
  return dataOf(result as { data?: { received: number; total_records: number }; error?: unknown; response: Response });
}

/**
 * Uploads the lines of FILE the job does not have yet. A dropped connection or a busy service is
 * retried from the job's new counts.total; a refusal (not open, too large) is final. Once `stop` is
 * aborted, the upload ends after the line in hand and what the job holds is returned.
 */
export async function uploadRemaining(
  session: ApiSession, jobId: string, file: string, onProgress: (p: UploadProgress) => void, stop: AbortSignal,
): Promise<UploadOutcome> {
  let firstSkip: number | null = null;
  for (let attempt = 1; ; attempt++) {
    const job = dataOf(await session.client.GET('/v1/data-import/migration-jobs/{job_id}/', { params: { path: { job_id: jobId } } }));
    firstSkip ??= job.counts.total;
    const received = job.counts.total - firstSkip;
    if (stop.aborted) return { received, total_records: job.counts.total, skipped: firstSkip };
    try {
      const reply = await uploadOnce(session, jobId, file, job.counts.total, onProgress, stop);
      return { received: received + reply.received, total_records: reply.total_records, skipped: firstSkip };
    } catch (error) {
      // Stopped and failed: the next turn reads what the job holds once the service has written it.
      if (stop.aborted) { await settled(session, jobId); continue; }
      const transient = error instanceof UnreachableError
        || (error instanceof ApiError && (error.status === 401 || isUnavailable(error.status)))
        || (error instanceof TypeError);
      if (!transient || attempt >= session.retry.attempts) {
        throw error instanceof TypeError ? new UnreachableError(`the upload failed: ${error.message}`) : error;
      }
      if (error instanceof ApiError && error.status === 401) session.expireToken();
      await new Promise((resolve) => setTimeout(resolve, session.retry.baseDelayMs * 2 ** (attempt - 1)));
    }
  }
}

/** Waits (up to ~10 s) until the job's counts.total stops moving: a cut upload is still being written for a moment. */
async function settled(session: ApiSession, jobId: string): Promise<void> {
  let last = -1;
  for (let steady = 0, tries = 0; steady < 2 && tries < 20; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { total } = dataOf(await session.client.GET('/v1/data-import/migration-jobs/{job_id}/', { params: { path: { job_id: jobId } } })).counts;
    steady = total === last ? steady + 1 : 0;
    last = total;
  }
}
