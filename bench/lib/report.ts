// One row of the result table, and the table itself (terminal and docs/performance.md).
export interface Figures { cpuMsPerRequest?: number | undefined; rps?: number; p50?: number; p99?: number; non2xx?: number; errors?: number; codes?: Record<string, number> }

export interface Row {
  store: string;
  what: string;
  connections?: number | undefined;
  service: Figures;
  baseline?: (Figures & { label: string }) | undefined;
  /** Service req/s over baseline req/s, when there is a baseline. */
  ratio?: number | undefined;
  target: string;
  /** null: not measured (endpoint missing or the run failed). */
  pass: boolean | null;
  note?: string | undefined;
}

const num = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? '—' : v.toLocaleString('en-GB', { maximumFractionDigits: digits, minimumFractionDigits: digits }));

export function ratioRow(base: Omit<Row, 'ratio' | 'pass'>, min: number): Row {
  const ratio = base.service.rps !== undefined && base.baseline?.rps ? base.service.rps / base.baseline.rps : undefined;
  const clean = !base.service.non2xx && !base.service.errors;
  return { ...base, ratio, pass: ratio === undefined ? null : ratio >= min && clean };
}

export function markdownTable(rows: Row[]): string {
  const head = '| Store | What | Conc. | Service req/s | p50 ms | p99 ms | CPU ms/req | Baseline | Baseline req/s | Baseline CPU ms/req | Ratio | Target | Result |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|';
  const lines = rows.map((r) => {
    const bad = (r.service.non2xx ?? 0) + (r.service.errors ?? 0);
    const result = r.pass === null ? 'NOT RUN' : r.pass ? 'PASS' : 'MISS';
    const note = [r.note, bad ? `${bad} failed (${Object.entries(r.service.codes ?? {}).filter(([c]) => !c.startsWith('2')).map(([c, n]) => `${c}×${n}`).join(', ') || 'errors'})` : undefined]
      .filter(Boolean).join('; ');
    return `| ${r.store} | ${r.what}${note ? ` — ${note}` : ''} | ${r.connections ?? ''} | ${num(r.service.rps)} | ${num(r.service.p50, 1)} | ${num(r.service.p99, 1)} | ${num(r.service.cpuMsPerRequest, 2)} | ${r.baseline?.label ?? '(absolute)'} | ${num(r.baseline?.rps)} | ${num(r.baseline?.cpuMsPerRequest, 2)} | ${r.ratio === undefined ? '—' : `${Math.round(r.ratio * 100)}%`} | ${r.target} | ${result} |`;
  });
  return [head, ...lines].join('\n');
}
