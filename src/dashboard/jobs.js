// The lead's view of the migration jobs: every job, finished ones included, newest first and paged,
// each with its counts, its reconciliation verdict and a link to its report; and one job opened: its
// records searched by account, outcome and error code, and its pace on a time scale that fits it.
import { Component, h } from './vendor/preact.js';
import htm from './vendor/htm.js';
import uPlot from './vendor/uplot.js';
import { get, seg } from './api.js';
import { nf, utc } from './format.js';

const html = htm.bind(h);
const UNDER_WAY = ['scheduled', 'queued', 'running', 'paused'];
const FINISHED = ['completed', 'cancelled'];
const OUTCOMES = ['pending', 'running', 'succeeded', 'skipped', 'failed', 'cancelled'];
const BUCKET_NAMES = { 60: 'minute', 300: '5 minutes', 900: '15 minutes', 3600: 'hour', 21600: '6 hours', 86400: 'day' };

function duration(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m ${seconds % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** Pause a job under way, or resume one paused with pause/ (one its supplier holds cannot be resumed here). */
function JobControl({ job, onControl }) {
  if (job.paused) return html`<button data-testid="job-resume" onClick=${() => onControl(job, 'resume')}>Resume</button>`;
  if (UNDER_WAY.includes(job.state)) return html`<button data-testid="job-pause" onClick=${() => onControl(job, 'pause')}>Pause</button>`;
  return null;
}

/** A finished job's verdict comes from its reconciliation; one not finished is incomplete by definition. */
function Verdict({ job, verdict }) {
  const shown = FINISHED.includes(job.state) ? verdict : 'incomplete';
  return html`<span class=${`verdict verdict-${shown ?? 'pending'}`} data-testid="job-verdict" title="Reconciliation verdict">${shown ?? '…'}</span>`;
}

export function JobList({ jobs, verdicts, selected, onControl, onOpen, paging }) {
  if (jobs.length === 0) return html`<p class="muted" data-testid="no-jobs">No migration jobs yet.</p>`;
  return html`<div class="jobs">${jobs.map((job) => {
    const c = job.counts;
    const done = c.succeeded + c.skipped + c.failed + c.cancelled;
    const pct = c.total > 0 ? Math.round((done / c.total) * 1000) / 10 : 0;
    return html`<div class=${`card job${selected === job.id ? ' selected' : ''}`} data-testid="job" data-job-id=${job.id}>
      <div class="job-head"><code>${job.id.slice(0, 8)}</code> <span class=${`state state-${job.state}`}>${job.state}</span>
        ${job.dry_run ? html`<span class="state">dry run</span>` : ''} <${Verdict} job=${job} verdict=${verdicts[job.id]} />
        <span class="muted">${job.operations_team_name} · created ${utc(job.created_at)}</span>
        <span class="job-actions">
          <button class="link" data-testid="job-open" onClick=${() => onOpen(job)}>Records</button>
          <a href=${`/dashboard/jobs/${encodeURIComponent(job.id)}/report`} data-testid="job-report">Report</a>
          <${JobControl} job=${job} onControl=${onControl} />
        </span></div>
      <div class="bar" title=${`${pct}%`}><div class="bar-ok" style=${{ width: `${c.total ? (c.succeeded + c.skipped) / c.total * 100 : 0}%` }}></div><div class="bar-failed" style=${{ width: `${c.total ? (c.failed + c.cancelled) / c.total * 100 : 0}%` }}></div></div>
      <div class="job-figures" data-testid="job-figures">${[
        `${nf.format(done)} / ${nf.format(c.total)} (${pct}%)`, `${nf.format(c.succeeded)} succeeded`, `${nf.format(c.failed)} failed`,
        `${nf.format(c.running)} running`, `${job.records_per_minute}/min`, `ETA ${duration(job.eta_seconds)}`].join(' · ')}</div>
    </div>`;
  })}
  <div class="paging">
    <button data-testid="jobs-newer" disabled=${!paging.newer} onClick=${paging.newer}>Newer</button>
    <button data-testid="jobs-older" disabled=${!paging.older} onClick=${paging.older}>Older</button>
  </div></div>`;
}

/** Records finished per bucket of the job: stacked bars, the bucket as wide as the job's span needs. */
class RateChart extends Component {
  data() {
    const { buckets: b, bucket_seconds: w } = this.props.rate;
    // Each bar stands in the middle of its bucket; the axis spans exactly the buckets (uPlot's own range
    // would stretch a single bucket over years).
    return [b.map((x) => Date.parse(x.start) / 1000 + w / 2), b.map((x) => x.succeeded + x.failed), b.map((x) => x.failed)];
  }

  span() {
    const { buckets: b, bucket_seconds: w } = this.props.rate;
    return [Date.parse(b[0].start) / 1000, Date.parse(b[b.length - 1].start) / 1000 + w];
  }

  componentDidMount() {
    const width = Math.max(300, this.base.clientWidth - 8);
    this.plot = new uPlot({
      width, height: 200,
      legend: { show: true },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true, range: () => this.span() }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{}, { label: 'records', size: 60 }],
      series: [{},
        { label: 'finished', stroke: '#2f855a', fill: 'rgba(56,161,105,0.45)', paths: uPlot.paths.bars({ size: [0.8, 40] }), points: { show: false } },
        { label: 'of which failed', stroke: '#c53030', fill: 'rgba(229,62,62,0.6)', paths: uPlot.paths.bars({ size: [0.8, 40] }), points: { show: false } }],
    }, this.data(), this.base);
  }

  componentDidUpdate() { this.plot?.setData(this.data()); }
  componentWillUnmount() { this.plot?.destroy(); }
  shouldComponentUpdate(next) { return next.rate !== this.props.rate; }
  render() { return html`<div class="chart" data-testid="rate-chart"></div>`; }
}

export function RecordRows({ records, withJob }) {
  return html`<table class="records" data-testid="records">
    <thead><tr>${withJob && html`<th>Job</th>`}<th class="num">Line</th><th>External account number</th><th>Outcome</th><th>Step</th><th>Error</th><th>Finished (UTC)</th></tr></thead>
    <tbody>${records.map((r) => {
      const e = r.errors[0];
      return html`<tr data-testid="record">${withJob && html`<td><code>${r.job_id.slice(0, 8)}</code></td>`}<td class="num">${r.line}</td>
        <td><code>${r.external_account_number ?? '—'}</code></td><td>${r.outcome}</td><td>${r.step ?? ''}</td>
        <td>${e ? html`<code>${e.code}</code>${e.attr ? html` at <code>${e.attr}</code>` : ''} ${e.detail}` : ''}</td><td>${r.finished_at ? utc(r.finished_at) : ''}</td></tr>`;
    })}</tbody>
  </table>`;
}

/** One job opened: search its records, see its pace. */
export class JobDetail extends Component {
  state = { rate: null, found: null, next: null, query: null, error: null };

  componentDidMount() { this.loadRate(); }

  componentDidUpdate(previous) {
    if (previous.job.id !== this.props.job.id) { this.setState({ rate: null, found: null, next: null, query: null, error: null }); this.loadRate(); }
    else if (previous.job !== this.props.job && UNDER_WAY.includes(this.props.job.state)) this.loadRate();
  }

  async loadRate() {
    try { this.setState({ rate: await get(`migration-jobs/${seg(this.props.job.id)}/rate/`) }); } catch (error) { this.props.onError(error); }
  }

  search = async (event, more = false) => {
    event?.preventDefault();
    let query = this.state.query;
    if (!more) {
      const form = event.currentTarget.elements;
      query = new URLSearchParams();
      for (const name of ['external_account_number', 'outcome', 'error_code']) {
        const value = form[name].value.trim();
        if (value) query.set(name, value);
      }
    }
    const params = new URLSearchParams(query);
    if (more) params.set('after_line', String(this.state.next));
    try {
      const page = await get(`migration-jobs/${seg(this.props.job.id)}/records/search/?${params}`);
      this.setState({ query, found: more ? [...this.state.found, ...page.records] : page.records, next: page.next_after_line, error: null });
    } catch (error) {
      if (error.status === 400) this.setState({ error: error.message }); else this.props.onError(error);
    }
  };

  render({ job, onClose }, { rate, found, next, error }) {
    const width = rate ? BUCKET_NAMES[rate.bucket_seconds] ?? `${rate.bucket_seconds} s` : '';
    return html`<section class="card job-detail" data-testid="job-detail">
      <h2>Job <code>${job.id}</code> <button class="link close" onClick=${onClose}>close</button></h2>
      <h3>Records finished per ${width} (UTC)</h3>
      ${rate && (rate.buckets.length === 0 ? html`<p class="muted" data-testid="rate-empty">No record has finished yet.</p>` : html`<${RateChart} rate=${rate} />`)}
      <h3>Find records</h3>
      <form class="record-search" onSubmit=${this.search} data-testid="record-search">
        <input name="external_account_number" placeholder="External account number" aria-label="External account number" />
        <select name="outcome" aria-label="Outcome"><option value="">any outcome</option>${OUTCOMES.map((o) => html`<option value=${o}>${o}</option>`)}</select>
        <input name="error_code" list=${`codes-${job.id}`} placeholder="Error code" aria-label="Error code" />
        <datalist id=${`codes-${job.id}`}>${job.errors_by_code.map((e) => html`<option value=${e.code}>${e.code} (${e.count})</option>`)}</datalist>
        <button type="submit">Search</button>
      </form>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${found && (found.length === 0 ? html`<p class="muted" data-testid="no-records">No record of this job matches.</p>` : html`<${RecordRows} records=${found} />`)}
      ${next !== null && html`<button class="link" data-testid="records-more" onClick=${() => this.search(null, true)}>More</button>`}
    </section>`;
  }
}
