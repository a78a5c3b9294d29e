// The migration dashboard (D14). Preact + htm from node_modules, no build step. All data comes from
// the documented JSON endpoints through api.js.
import { Component, h, render } from './vendor/preact.js';
import htm from './vendor/htm.js';
import uPlot from './vendor/uplot.js';
import { get, isSignedIn, post, seg, signIn, signOut, SignedOut } from './api.js';

const html = htm.bind(h);
const REFRESH_MS = 5000;
const COUNTS = [
  ['staged', 'Staged'], ['in_progress', 'In progress'], ['imported', 'Imported'], ['failed', 'Failed'], ['skipped', 'Skipped'],
];
const nf = new Intl.NumberFormat('en-GB');

function duration(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m ${seconds % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

class SignIn extends Component {
  submit = async (event) => {
    event.preventDefault();
    const key = event.currentTarget.elements.apikey.value.trim();
    this.setState({ busy: true, error: null });
    try {
      await signIn(key);
      this.props.onSignedIn();
    } catch (error) {
      this.setState({ busy: false, error: error.message });
    }
  };

  render(_props, { busy, error }) {
    return html`<form class="card signin" onSubmit=${this.submit} data-testid="signin">
      <h1>Migration dashboard</h1>
      <label>API key <input name="apikey" type="password" autocomplete="off" required /></label>
      <button type="submit" disabled=${busy}>Sign in</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>`;
  }
}

/** Accounts created per hour: a uPlot bar chart, created once and given new data on each refresh. */
class HourlyChart extends Component {
  data() {
    const rows = this.props.hours;
    return [rows.map((r) => Date.parse(r.hour) / 1000), rows.map((r) => r.count)];
  }

  componentDidMount() {
    const width = Math.max(300, this.base.clientWidth - 8);
    this.plot = new uPlot({
      width, height: 220,
      legend: { show: false },
      // The hours are UTC (D14); show them so, whatever the laptop's time zone.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{}, { label: 'accounts', size: 60 }],
      series: [{}, { label: 'created', stroke: '#2b6cb0', fill: 'rgba(43,108,176,0.35)', paths: uPlot.paths.bars({ size: [0.8, 40] }), points: { show: false } }],
    }, this.data(), this.base);
  }

  componentDidUpdate() { this.plot?.setData(this.data()); }
  componentWillUnmount() { this.plot?.destroy(); }
  shouldComponentUpdate(next) { return next.hours !== this.props.hours; }
  render() { return html`<div class="chart" data-testid="chart"></div>`; }
}

function Counts({ counts }) {
  return html`<section class="counts">
    ${COUNTS.map(([key, name]) => html`<div class=${`card count count-${key}`}>
      <div class="label">${name}</div><div class="value" data-testid=${`count-${key}`}>${nf.format(counts[key])}</div>
    </div>`)}
  </section>`;
}

function ErrorGroups({ groups, onPick }) {
  if (groups.length === 0) return html`<p class="muted" data-testid="no-errors">No failing accounts.</p>`;
  return html`<table class="errors" data-testid="errors">
    <thead><tr><th>Code</th><th>Field</th><th class="num">Accounts</th><th>Examples</th></tr></thead>
    <tbody>${groups.map((g) => html`<tr data-testid="error-group">
      <td><code>${g.code}</code></td><td><code>${g.attr ?? '—'}</code></td><td class="num">${nf.format(g.count)}</td>
      <td>${g.examples.map((ext) => html`<button class="link" data-testid="example" onClick=${() => onPick(ext)}>${ext}</button> `)}</td>
    </tr>`)}</tbody>
  </table>`;
}

const UNDER_WAY = ['scheduled', 'queued', 'running', 'paused'];

/** Pause a job under way, or resume one paused with pause/ (one its supplier holds cannot be resumed here). */
function JobControl({ job, onControl }) {
  if (job.paused) return html`<button data-testid="job-resume" onClick=${() => onControl(job, 'resume')}>Resume</button>`;
  if (UNDER_WAY.includes(job.state)) return html`<button data-testid="job-pause" onClick=${() => onControl(job, 'pause')}>Pause</button>`;
  return null;
}

function Jobs({ jobs, onControl }) {
  if (jobs.length === 0) return html`<p class="muted" data-testid="no-jobs">No unfinished migration jobs.</p>`;
  return html`<div class="jobs">${jobs.map((job) => {
    const c = job.counts;
    const done = c.succeeded + c.skipped + c.failed + c.cancelled;
    const pct = c.total > 0 ? Math.round((done / c.total) * 1000) / 10 : 0;
    return html`<div class="card job" data-testid="job">
      <div class="job-head"><code>${job.id.slice(0, 8)}</code> <span class=${`state state-${job.state}`}>${job.state}</span>
        ${job.dry_run ? html`<span class="state">dry run</span>` : ''} <span class="muted">${job.operations_team_name}</span>
        <${JobControl} job=${job} onControl=${onControl} /></div>
      <div class="bar" title=${`${pct}%`}><div class="bar-ok" style=${{ width: `${c.total ? (c.succeeded + c.skipped) / c.total * 100 : 0}%` }}></div><div class="bar-failed" style=${{ width: `${c.total ? (c.failed + c.cancelled) / c.total * 100 : 0}%` }}></div></div>
      <div class="job-figures" data-testid="job-figures">${[
        `${nf.format(done)} / ${nf.format(c.total)} (${pct}%)`, `${nf.format(c.succeeded)} succeeded`, `${nf.format(c.failed)} failed`,
        `${nf.format(c.running)} running`, `${job.records_per_minute}/min`, `ETA ${duration(job.eta_seconds)}`].join(' · ')}</div>
    </div>`;
  })}</div>`;
}

function Account({ account, onClose }) {
  if (!account) return null;
  if (account.error) return html`<section class="card account" data-testid="account"><h2>${account.ext}</h2><p class="error">${account.error}</p></section>`;
  const { ext, status, attempts } = account;
  return html`<section class="card account" data-testid="account">
    <h2>Account <code>${ext}</code> <button class="link close" onClick=${onClose}>close</button></h2>
    <dl>
      <dt>Status</dt><dd data-testid="account-status">${status.status}</dd>
      <dt>Service account</dt><dd>${status.service_account_number || '—'}</dd>
      <dt>Last error</dt><dd data-testid="account-last-error">${status.last_error ? html`<code>${status.last_error.code}</code> ${status.last_error.detail}` : '—'}</dd>
    </dl>
    <table class="attempts"><thead><tr><th>Started (UTC)</th><th>Outcome</th><th>Dry run</th><th>Error</th></tr></thead>
      <tbody>${attempts.map((a) => html`<tr data-testid="attempt"><td>${a.started_at}</td><td>${a.outcome}</td><td>${a.dry_run ? 'yes' : 'no'}</td>
        <td>${a.error ? html`<code>${a.error.code}</code>${a.error.attr ? html` at <code>${a.error.attr}</code>` : ''} ${a.error.detail}` : ''}</td></tr>`)}</tbody>
    </table>
  </section>`;
}

class App extends Component {
  state = { signedIn: isSignedIn(), suppliers: null, supplier: '', stats: null, error: null, account: null, updated: null };

  componentDidMount() {
    if (this.state.signedIn) this.loadSuppliers();
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
  }

  componentWillUnmount() { clearInterval(this.timer); }

  fail(error) {
    if (error instanceof SignedOut) this.setState({ signedIn: false, stats: null, suppliers: null, error: error.message });
    else this.setState({ error: error.message });
  }

  async loadSuppliers() {
    try {
      const suppliers = await get('suppliers/');
      const remembered = sessionStorage.getItem('migration-dashboard.supplier');
      const supplier = suppliers.some((s) => s.code === remembered) ? remembered : (suppliers[0]?.code ?? '');
      this.setState({ suppliers, supplier, error: null }, () => this.refresh());
    } catch (error) { this.fail(error); }
  }

  async refresh() {
    const { signedIn, supplier } = this.state;
    if (!signedIn || !supplier || document.hidden) return;
    try {
      const stats = await get(`stats/${seg(supplier)}/`);
      if (stats.import_supplier === this.state.supplier) this.setState({ stats, error: null, updated: new Date() });
    } catch (error) { this.fail(error); }
  }

  pick = (event) => {
    const supplier = event.currentTarget.value;
    sessionStorage.setItem('migration-dashboard.supplier', supplier);
    this.setState({ supplier, stats: null, account: null }, () => this.refresh());
  };

  showAccount = async (ext) => {
    const { supplier } = this.state;
    try {
      const [status, attempts] = await Promise.all([
        get(`account-transfer-status/${seg(supplier)}/${seg(ext)}/`), get(`stats/${seg(supplier)}/attempts/${seg(ext)}/`),
      ]);
      this.setState({ account: { ext, status, attempts: attempts.attempts } });
    } catch (error) {
      if (error instanceof SignedOut) return this.fail(error);
      this.setState({ account: { ext, error: error.status === 404 ? `No staged account "${ext}".` : error.message } });
    }
  };

  controlJob = async (job, action) => {
    try {
      await post(`migration-jobs/${seg(job.id)}/${action}/`);
      await this.refresh();
    } catch (error) { this.fail(error); }
  };

  search = (event) => {
    event.preventDefault();
    const ext = event.currentTarget.elements.ext.value.trim();
    if (ext) this.showAccount(ext);
  };

  signOut = () => { signOut(); this.setState({ signedIn: false, stats: null, suppliers: null, account: null }); };

  render(_props, { signedIn, suppliers, supplier, stats, error, account, updated }) {
    if (!signedIn) return html`<main class="narrow"><${SignIn} onSignedIn=${() => this.setState({ signedIn: true, error: null }, () => this.loadSuppliers())} />
      ${error && html`<p class="muted">${error}</p>`}</main>`;
    return html`<main>
      <header>
        <h1>Migration dashboard</h1>
        <label>Supplier <select data-testid="supplier" value=${supplier} onChange=${this.pick}>
          ${(suppliers ?? []).map((s) => html`<option value=${s.code}>${s.code}</option>`)}
        </select></label>
        ${stats && html`<span class=${`state state-${stats.status}`} data-testid="supplier-status">${stats.status}</span>`}
        <form class="search" onSubmit=${this.search}><input name="ext" placeholder="External account number" aria-label="External account number" data-testid="search" />
          <button type="submit">Find</button></form>
        <span class="muted" data-testid="updated">${updated ? `updated ${updated.toLocaleTimeString('en-GB')}` : ''}</span>
        <button class="link" onClick=${this.signOut}>Sign out</button>
      </header>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${suppliers && suppliers.length === 0 && html`<p class="muted">Your organisation has no import supplier.</p>`}
      <${Account} account=${account} onClose=${() => this.setState({ account: null })} />
      ${stats && html`
        <${Counts} counts=${stats.counts} />
        <div class="grid">
          <section class="card"><h2>Accounts created per hour (last 48 hours, UTC)</h2><${HourlyChart} hours=${stats.created_per_hour} /></section>
          <section class="card"><h2>Migration jobs</h2><${Jobs} jobs=${stats.jobs} onControl=${this.controlJob} /></section>
        </div>
        <section class="card"><h2>Failing accounts by error</h2><${ErrorGroups} groups=${stats.errors_by_code} onPick=${this.showAccount} /></section>`}
    </main>`;
  }
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading…" placeholder: Preact renders beside foreign nodes, not over them
render(html`<${App} />`, root);
