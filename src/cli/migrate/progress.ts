import cliProgress from 'cli-progress';
import type { Job } from './api-session.ts';
import type { UploadProgress } from './upload.ts';
import { bytes, duration, number, pace, recordsDone, topErrors } from './format.ts';

// What the user sees while a job runs (D12). On a terminal: two cli-progress bars on stderr, upload
// bytes then records done of total; elsewhere (a log, CI): one plain line every few seconds, so a
// log file stays readable. stdout is kept for the summary or the one --json object.
export interface Progress {
  upload(progress: UploadProgress): void;
  uploaded(received: number, bytesTotal: number): void;
  /** The upload was stopped (Ctrl-C) after `received` records, as the service counts them. */
  uploadStopped(received: number): void;
  job(job: Job): void;
  stop(): void;
}

function jobLine(job: Job): string {
  const done = recordsDone(job);
  const percent = job.counts.total > 0 ? Math.floor((done / job.counts.total) * 100) : 0;
  const eta = job.eta_seconds === null ? '' : `, ETA ${duration(job.eta_seconds)}`;
  const errors = job.errors_by_code.length > 0 ? `; top errors: ${topErrors(job)}` : '';
  return `job ${job.id} ${job.state}: ${number(done)}/${number(job.counts.total)} done (${percent}%), `
    + `${number(job.counts.failed)} failed, ${pace(job)}${eta}${errors}`;
}

export function plainProgress(write: (text: string) => void, everyMs: number): Progress {
  let lastAt = 0;
  let lastState = '';
  const due = () => Date.now() - lastAt >= everyMs;
  return {
    upload({ bytesRead, bytesTotal }) {
      if (!due()) return;
      lastAt = Date.now();
      write(`uploading: ${bytes(bytesRead)} of ${bytes(bytesTotal)}\n`);
    },
    uploaded(received, bytesTotal) {
      write(`uploaded ${number(received)} records (${bytes(bytesTotal)})\n`);
      lastAt = 0;
    },
    uploadStopped(received) {
      write(`upload stopped: ${number(received)} records sent\n`);
    },
    job(job) {
      // A change of state is worth a line at once; otherwise the pace is set by everyMs.
      if (!due() && job.state === lastState) return;
      lastAt = Date.now();
      lastState = job.state;
      write(`${jobLine(job)}\n`);
    },
    stop() {},
  };
}

export function terminalProgress(stream: NodeJS.WriteStream): Progress {
  const bars = new cliProgress.MultiBar({
    stream, hideCursor: true, clearOnComplete: false, etaBuffer: 50, autopadding: true,
    format: ' {label} |{bar}| {percentage}% {detail}',
  }, cliProgress.Presets.shades_classic);
  let uploadBar: cliProgress.SingleBar | null = null;
  let jobBar: cliProgress.SingleBar | null = null;
  return {
    upload({ bytesRead, bytesTotal }) {
      uploadBar ??= bars.create(bytesTotal, 0, { label: 'upload ', detail: '' });
      uploadBar.update(bytesRead, { detail: `${bytes(bytesRead)} of ${bytes(bytesTotal)}` });
    },
    uploaded(received, bytesTotal) {
      uploadBar ??= bars.create(bytesTotal, 0, { label: 'upload ', detail: '' });
      uploadBar.update(bytesTotal, { detail: `${number(received)} records, ${bytes(bytesTotal)}` });
    },
    uploadStopped(received) {
      // The bar stays where the reading got to; the words say what the service has.
      uploadBar?.update({ detail: `stopped: ${number(received)} records sent` });
    },
    job(job) {
      const eta = job.eta_seconds === null ? '' : ` ETA ${duration(job.eta_seconds)}`;
      const detail = `${number(recordsDone(job))}/${number(job.counts.total)} ${job.state}, `
        + `${pace(job)}${eta}, ${number(job.counts.failed)} failed`
        + (job.errors_by_code.length > 0 ? ` (${topErrors(job)})` : '');
      jobBar ??= bars.create(Math.max(1, job.counts.total), 0, { label: 'records', detail });
      jobBar.setTotal(Math.max(1, job.counts.total));
      jobBar.update(recordsDone(job), { detail });
    },
    stop() { bars.stop(); },
  };
}
