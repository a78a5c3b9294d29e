import { request, type ClientRequest } from 'node:http';

// Streams a generated NDJSON body to a migration job's records endpoint (D11) over one chunked
// request, generating it as it goes: the bench never holds the whole upload.
export interface UploadOutcome { status: number; body: string; seconds: number; bytes: number; lines: number }

const LINES_PER_WRITE = 500;

export function uploadNdjson(url: string, headers: Record<string, string>, count: number, line: (n: number) => string): Promise<UploadOutcome> {
  const started = performance.now();
  let bytes = 0;
  let lines = 0;
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-ndjson' } }, (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, seconds: (performance.now() - started) / 1000, bytes, lines }));
      res.on('error', reject);
    });
    req.on('error', (error) => { if (!answered) reject(error); });
    void (async () => {
      for (let n = 0; n < count && !req.destroyed && !answered; n += LINES_PER_WRITE) {
        let chunk = '';
        const end = Math.min(count, n + LINES_PER_WRITE);
        for (let i = n; i < end; i++) chunk += `${line(i)}\n`;
        bytes += Buffer.byteLength(chunk);
        lines = end;
        if (!req.write(chunk)) await drainedOrClosed(req);
      }
      req.end();
    })().catch((error: Error) => { if (!answered) reject(error); });
  });
}

function drainedOrClosed(req: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => { req.off('drain', done); req.off('close', done); resolve(); };
    req.on('drain', done);
    req.on('close', done);
  });
}
