import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { Store } from '../../db/store.ts';
import type { Caller } from '../../core/caller.ts';
import { csvCell } from '../../core/csv.ts';
import { addDecimals, normaliseDecimal } from '../../core/decimal-text.ts';
import { ResumableSha256 } from '../../core/resumable-sha256.ts';
import { utcSeconds } from '../../schemas/datetime.ts';
import { COUNT_MEASURES, MEASURES, MONEY_MEASURES, type Measure } from './migration-jobs.schemas.ts';
import { isFinished } from './job-states.ts';
import { jobView, requireJob } from './migration-jobs.service.ts';
import * as repo from './reconciliation.repository.ts';
import {
  EXCEPTION_CSV_COLUMNS, type ExceptionLine, type MeasureLine, type MeasureVerdict, type ReconciliationReport,
} from './reconciliation.schemas.ts';

// Reconciliation: the legacy figures, the file's and the store's, measure by measure, and every
// record where the store does not hold what its line sent. The store's side is read afresh each time
// from the items' own keys (reconciliation.repository.ts), never from the records' outcomes.

type Db = Kysely<Database>;

const PAGE = 500;
const isMoney = (measure: Measure) => (MONEY_MEASURES as readonly string[]).includes(measure);

function sameFigure(measure: Measure, a: number | string, b: number | string): boolean {
  return isMoney(measure) ? normaliseDecimal(String(a)) === normaliseDecimal(String(b)) : a === b;
}

function shown(measure: Measure, value: number | string): number | string {
  return isMoney(measure) ? normaliseDecimal(String(value)) : value;
}

/** Every record's measures, PAGE lines at a time in line order (lines are numbered 1..total_lines), with the exceptions each one makes. */
async function* measuredRecords(db: Db, job: { id: string; supplier_id: number; total_lines: number }) {
  for (let from = 1; from <= job.total_lines; from += PAGE) {
    const rows = await repo.recordMeasures(db, job.id, job.supplier_id, { from, to: from + PAGE - 1 });
    for (const row of rows) yield { row, exceptions: exceptionsOf(row) };
  }
}

function exceptionsOf(row: repo.RecordMeasuresRow): ExceptionLine[] {
  const base = { line: row.line, external_account_number: row.external_account_number };
  // Not migrated, and said apart when the team chose it: an account marked to skip.
  if (!row.found) return [{ ...base, measure: row.skipped ? 'skipped' : 'not_migrated', file: null, migrated: null }];
  // A record that failed on an account the store holds (a transaction whose id it holds with another
  // date, drift refused): the measures, counts and sums, may all agree while the store holds other
  // data than the line sent.
  // And a record that ran on an account imported before with other data (warned, on_drift warn),
  // whether or not a later step then failed: the store kept the account as it was, not as the line
  // sent it. Both read from what the record's run kept: they stay until the record runs again.
  const outcomes = [...(row.failed ? ['failed' as const] : []), ...(row.drifted ? ['account_differs' as const] : [])];
  return [...outcomes.map((measure) => ({ ...base, measure, file: null, migrated: null })), ...MEASURES.filter((m) => !sameFigure(m, row.file[m], row.migrated[m]))
    .map((m) => ({ ...base, measure: m, file: shown(m, row.file[m]), migrated: shown(m, row.migrated[m]) }))];
}

/**
 * How many line ranges the store's side of a job is read in at once (Store.readInSlices): on
 * PostgreSQL, one per core a small server gives a read, as its parallel query does by default.
 */
const RECONCILE_SLICES = 2;
const LAST_LINE = 2 ** 31 - 1;

/**
 * The store's side of a job's records: its lines in RECONCILE_SLICES ranges read in one snapshot (the
 * last range open-ended, for lines uploaded since the job was read), their figures added exactly.
 */
async function storeSide(store: Store, job: { id: string; supplier_id: number; total_lines: number }): Promise<repo.MigratedTotals> {
  const slices = Math.max(1, Math.min(RECONCILE_SLICES, job.total_lines));
  const size = Math.ceil(job.total_lines / slices);
  const parts = await store.readInSlices(slices, (trx, slice) => repo.migratedTotals(trx, job.id, job.supplier_id,
    slices === 1 ? undefined : { from: slice * size + 1, to: slice === slices - 1 ? LAST_LINE : (slice + 1) * size }));
  return parts.reduce((sum, part) => {
    const next = { ...sum, exceptions: sum.exceptions + part.exceptions };
    for (const m of COUNT_MEASURES) next[m] = sum[m] + part[m];
    for (const m of MONEY_MEASURES) next[m] = addDecimals(sum[m], part[m]);
    return next;
  });
}

export async function reconcile(store: Store, caller: Caller, id: string): Promise<ReconciliationReport> {
  const { db } = store;
  const job = await requireJob(db, caller, id);
  const view = await jobView(db, job);
  const totals = await repo.fileTotalsOf(db, job.id);
  const { exceptions, ...migrated } = await storeSide(store, job);
  const measures = MEASURES.map((m) => measureLine(m, totals.control_totals[m], totals[m], migrated[m]));
  const verdict = !isFinished(job.state) ? 'incomplete' : measures.some((m) => m.verdict === 'differs') || exceptions > 0 ? 'differs' : 'balanced';
  return {
    job_id: job.id,
    import_supplier: job.supplier_code,
    generated_at: utcSeconds(new Date()),
    job_state: view.state,
    file: {
      sha256: totals.upload_sha256_overlapped ? null
        : (totals.upload_sha256_state === null ? await ResumableSha256.create() : await ResumableSha256.restore(totals.upload_sha256_state)).hex(),
      lines: job.total_lines,
      unparsable_lines: totals.file_unparsable_lines,
    },
    uploaded_by: totals.uploaded_by,
    started_at: view.started_at,
    finished_at: view.finished_at,
    measures,
    verdict,
    exceptions,
  };
}

function measureLine(measure: Measure, control: number | string | undefined, file: number | string, migrated: number | string): MeasureLine {
  const agree = sameFigure(measure, file, migrated) && (control === undefined || sameFigure(measure, control, file));
  const verdict: MeasureVerdict = !agree ? 'differs' : control === undefined ? 'not_declared' : 'balanced';
  return { measure, control: control === undefined ? null : shown(measure, control), file: shown(measure, file), migrated: shown(measure, migrated), verdict };
}

const MONEY_TEXT = /^-?\d+\.\d+$/;

/**
 * A cell of the exceptions CSV. A sum of money is a number the service wrote from numeric: a
 * spreadsheet must read "-12.30" as a number, so it is written as one; every other text (an external
 * account number) is neutralised by csvCell.
 */
function figureCell(value: string | number | null): string {
  return typeof value === 'string' && MONEY_TEXT.test(value) ? value : csvCell(value);
}

function exceptionCsvRow(e: ExceptionLine): string {
  return `${[csvCell(e.line), csvCell(e.external_account_number), csvCell(e.measure), figureCell(e.file), figureCell(e.migrated)].join(',')}\r\n`;
}

/** The exceptions in line order: NDJSON or CSV text chunks, one page of records at a time. */
export async function streamExceptions(db: Db, caller: Caller, id: string, format: 'ndjson' | 'csv'): Promise<AsyncIterable<string>> {
  const job = await requireJob(db, caller, id);
  return (async function* () {
    if (format === 'csv') yield `${EXCEPTION_CSV_COLUMNS.join(',')}\r\n`;
    let out: string[] = [];
    for await (const { exceptions } of measuredRecords(db, job)) {
      for (const e of exceptions) {
        out.push(format === 'csv' ? exceptionCsvRow(e) : `${JSON.stringify(e)}\n`);
      }
      if (out.length >= PAGE) {
        yield out.join('');
        out = [];
      }
    }
    if (out.length > 0) yield out.join('');
  })();
}
