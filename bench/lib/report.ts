// One row of the result table, and the table itself (terminal and docs/performance.md).
export interface Figures {
  cpuMsPerRequest?: number | undefined;
  /** The load generator's CPU over the measured seconds, in cores (1 = one core busy throughout). */
  generatorCoreShare?: number | undefined;
  rps?: number;
  p50?: number;
  p99?: number;
  non2xx?: number;
  errors?: number;
  codes?: Record<string, number>;
  /** The first failure seen (an answer's status and body, or a baseline loop's error), to say why. */
  firstError?: string | undefined;
}

export interface Row {
  store: string;
  what: string;
  connections?: number | undefined;
  service: Figures;
  baseline?: (Figures & { label: string }) | undefined;
  /** Service req/s over baseline req/s, when there is a baseline. */
  ratio?: number | undefined;
  target: string;
  /** null: not measured (endpoint missing, nothing to measure). */
  pass: boolean | null;
  /** Why the row stopped before giving figures (it threw): reported FAILED, not NOT RUN. */
  aborted?: string | undefined;
  note?: string | undefined;
}

/**
 * FAILED: a request of the service or an operation of the baseline failed (or the row threw), so its
 * figures measure something else than the row says: a run of 404s is fast, a baseline whose queries
 * fail is fast. It wins over PASS and MISS, which both mean "measured".
 */
export type Result = 'PASS' | 'MISS' | 'FAILED' | 'NOT RUN';

const failures = (f: Figures | undefined) => (f?.non2xx ?? 0) + (f?.errors ?? 0);

export function resultOf(r: Row): Result {
  if (r.aborted !== undefined || failures(r.service) > 0 || failures(r.baseline) > 0) return 'FAILED';
  if (r.pass === null) return 'NOT RUN';
  return r.pass ? 'PASS' : 'MISS';
}

const num = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? '—' : v.toLocaleString('en-GB', { maximumFractionDigits: digits, minimumFractionDigits: digits }));

export function ratioRow(base: Omit<Row, 'ratio' | 'pass'>, min: number): Row {
  const ratio = base.service.rps !== undefined && base.baseline?.rps ? base.service.rps / base.baseline.rps : undefined;
  const clean = failures(base.service) === 0 && failures(base.baseline) === 0;
  return { ...base, ratio, pass: ratio === undefined ? null : ratio >= min && clean };
}

/** A table cell must stay on one line and must not close the cell early. */
const cell = (text: string) => text.replace(/[\r\n|]+/g, ' ').slice(0, 200);

/** "service: 966 failed (404×966); first: 404 {…}" — by status (or error) code, then connection errors. */
function failureNote(side: string, f: Figures | undefined): string | undefined {
  const count = failures(f);
  if (!f || count === 0) return undefined;
  const byCode = Object.entries(f.codes ?? {}).filter(([c]) => !c.startsWith('2')).map(([c, n]) => `${c}×${n}`);
  if (f.errors) byCode.push(`${f.errors} error${f.errors === 1 ? '' : 's'}`);
  return `${side}: ${count} failed (${byCode.join(', ') || 'no status'})${f.firstError ? `; first: ${cell(f.firstError)}` : ''}`;
}

export function markdownTable(rows: Row[]): string {
  const head = '| Store | What | Conc. | Service req/s | p50 ms | p99 ms | CPU ms/req | Baseline | Baseline req/s | Baseline CPU ms/req | Ratio | Target | Result |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|';
  const lines = rows.map((r) => {
    const result = resultOf(r);
    const note = [r.note, r.aborted === undefined ? undefined : `failed: ${cell(r.aborted)}`,
      failureNote('service', r.service), failureNote('baseline', r.baseline)].filter(Boolean).join('; ');
    // A failed row's figures are not a measurement of what the row names: none is printed.
    const shown = (v: number | undefined, digits = 0) => (result === 'FAILED' ? '—' : num(v, digits));
    const ratio = r.ratio === undefined || result === 'FAILED' ? '—' : `${Math.round(r.ratio * 100)}%`;
    return `| ${r.store} | ${r.what}${note ? ` — ${note}` : ''} | ${r.connections ?? ''} | ${shown(r.service.rps)} | ${shown(r.service.p50, 1)} | ${shown(r.service.p99, 1)} | ${shown(r.service.cpuMsPerRequest, 2)} | ${r.baseline?.label ?? '(absolute)'} | ${shown(r.baseline?.rps)} | ${shown(r.baseline?.cpuMsPerRequest, 2)} | ${ratio} | ${r.target} | ${result} |`;
  });
  return [head, ...lines].join('\n');
}
