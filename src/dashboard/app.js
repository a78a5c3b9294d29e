// The migration dashboard (D14), the migration lead's view. Preact + htm from node_modules, no build
// step. All data comes from the documented JSON endpoints through api.js.
import { Component, h, render } from './vendor/preact.js';
import htm from './vendor/htm.js';
import uPlot from './vendor/uplot.js';
import { get, getPage, isSignedIn, post, seg, signOut, SignedOut } from './api.js';
import { nf } from './format.js';
import { JobDetail, JobList, RecordRows } from './jobs.js';
import { SignIn } from './signin.js';

const html = htm.bind(h);
const REFRESH_MS = 5000;
const JOBS_PAGE = 10;
/** Each headline card: its figure from the stats' counts, its name, and what exactly it counts. */
const COUNTS = [
  ['imported', 'Imported', (c) => c.imported, () => 'accounts created'],
  ['staged', 'Staged, not imported', (c) => c.staged, () => 'accounts waiting, failing or being created'],
  ['in_progress', 'Creating now', (c) => c.in_progress, () => 'accounts a create is running for'],
  ['failed', 'Failed', (c) => c.failed + c.rejected, (c) => html`<span data-testid="count-failed-accounts">${nf.format(c.failed)}</span> accounts whose last create failed
    + <span data-testid="count-rejected">${nf.format(c.rejected)}</span> job records rejected before staging`],
  ['skipped', 'Skipped', (c) => c.skipped, () => 'accounts marked to skip'],
];
const FINISHED = ['completed', 'cancelled'];

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
    ${COUNTS.map(([key, name, value, what]) => html`<div class=${`card count count-${key}`}>
      <div class="label">${name}</div><div class="value" data-testid=${`count-${key}`}>${nf.format(value(counts))}</div>
      <div class="what">${what(counts)}</div>
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

/** An account searched for: its import status and attempts when staged, and its records in the jobs shown. */
function Account({ account, onClose }) {
  if (!account) return null;
  const { ext, status, attempts, records, error } = account;
  return html`<section class="card account" data-testid="account">
    <h2>Account <code>${ext}</code> <button class="link close" onClick=${onClose}>close</button></h2>
    ${error && html`<p class="error">${error}</p>`}
    ${status ? html`<dl>
      <dt>Status</dt><dd data-testid="account-status">${status.status}</dd>
      <dt>Service account</dt><dd>${status.service_account_number || '—'}</dd>
      <dt>Last error</dt><dd data-testid="account-last-error">${status.last_error ? html`<code>${status.last_error.code}</code> ${status.last_error.detail}` : '—'}</dd>
    </dl>
    <table class="attempts"><thead><tr><th>Started (UTC)</th><th>Outcome</th><th>Dry run</th><th>Error</th></tr></thead>
      <tbody>${attempts.map((a) => html`<tr data-testid="attempt"><td>${a.started_at}</td><td>${a.outcome}</td><td>${a.dry_run ? 'yes' : 'no'}</td>
        <td>${a.error ? html`<code>${a.error.code}</code>${a.error.attr ? html` at <code>${a.error.attr}</code>` : ''} ${a.error.detail}` : ''}</td></tr>`)}</tbody>
    </table>` : !error && html`<p data-testid="account-not-staged">Never staged${records?.length ? ': a migration job rejected it before staging.' : '.'}</p>`}
    ${records && (records.length > 0
      ? html`<h3>In the migration jobs shown</h3><${RecordRows} records=${records} withJob=${true} />`
      : html`<p class="muted">Not in the migration jobs shown.</p>`)}
  </section>`;
}

class App extends Component {
  state = {
    signedIn: isSignedIn(), suppliers: null, supplier: '', stats: null, error: null, account: null, updated: null,
    jobs: [], cursors: [null], next: null, verdicts: {}, openJob: null,
  };

  componentDidMount() {
    if (this.state.signedIn) this.loadSuppliers();
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
  }

  componentWillUnmount() { clearInterval(this.timer); }

  fail = (error) => {
    if (error instanceof SignedOut) this.setState({ signedIn: false, stats: null, suppliers: null, error: error.message });
    else this.setState({ error: error.message });
  };

  async loadSuppliers() {
    try {
      const suppliers = await get('suppliers/');
      const remembered = sessionStorage.getItem('migration-dashboard.supplier');
      const supplier = suppliers.some((s) => s.code === remembered) ? remembered : (suppliers[0]?.code ?? '');
      this.setState({ suppliers, supplier, error: null }, () => this.refresh());
    } catch (error) { this.fail(error); }
  }

  async refresh() {
    const { signedIn, supplier, cursors } = this.state;
    if (!signedIn || !supplier || document.hidden) return;
    try {
      const cursor = cursors[cursors.length - 1];
      const [stats, page] = await Promise.all([get(`stats/${seg(supplier)}/`),
        getPage(`migration-jobs/?import_supplier=${seg(supplier)}&page_size=${JOBS_PAGE}${cursor ? `&cursor=${seg(cursor)}` : ''}`)]);
      if (stats.import_supplier !== this.state.supplier) return;
      const openJob = this.state.openJob && (page.body.find((j) => j.id === this.state.openJob.id) ?? this.state.openJob);
      this.setState({ stats, jobs: page.body, next: page.next, openJob, error: null, updated: new Date() });
      await this.loadVerdicts(page.body);
    } catch (error) { this.fail(error); }
  }

  /** The verdict of each finished job shown, reconciled once per job and end (a finished job's figures rarely move). */
  async loadVerdicts(jobs) {
    for (const job of jobs.filter((j) => FINISHED.includes(j.state))) {
      const key = `${job.id}@${job.finished_at}`;
      if (this.verdictKeys?.has(key)) continue;
      (this.verdictKeys ??= new Set()).add(key);
      const report = await get(`migration-jobs/${seg(job.id)}/reconciliation/`);
      this.setState({ verdicts: { ...this.state.verdicts, [job.id]: report.verdict } });
    }
  }

  pick = (event) => {
    const supplier = event.currentTarget.value;
    sessionStorage.setItem('migration-dashboard.supplier', supplier);
    this.setState({ supplier, stats: null, account: null, jobs: [], cursors: [null], next: null, openJob: null }, () => this.refresh());
  };

  /** Its import status when staged, and wherever the jobs shown hold it (a record they rejected is never staged). */
  showAccount = async (ext) => {
    const { supplier, jobs } = this.state;
    const search = (job) => get(`migration-jobs/${seg(job.id)}/records/search/?external_account_number=${seg(ext)}`)
      .then((page) => page.records.map((r) => ({ ...r, job_id: job.id })));
    try {
      const records = (await Promise.all(jobs.map(search))).flat();
      const [status, attempts] = await Promise.all([
        get(`account-transfer-status/${seg(supplier)}/${seg(ext)}/`), get(`stats/${seg(supplier)}/attempts/${seg(ext)}/`),
      ]).catch((error) => {
        // Never staged (404); or a number the service refuses as an account number (400), which a
        // job's record may still hold: then that record is what there is to show.
        if (error.status === 404 || (error.status === 400 && records.length > 0)) return [null, null];
        throw error;
      });
      this.setState({ account: { ext, status, attempts: attempts?.attempts ?? [], records } });
    } catch (error) {
      if (error instanceof SignedOut) return this.fail(error);
      this.setState({ account: { ext, error: error.message } });
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

  page = (cursors) => this.setState({ cursors }, () => this.refresh());

  signOut = () => { signOut(); this.setState({ signedIn: false, stats: null, suppliers: null, account: null, openJob: null }); };

  render(_props, { signedIn, suppliers, supplier, stats, error, account, updated, jobs, cursors, next, verdicts, openJob }) {
    if (!signedIn) return html`<main class="narrow"><${SignIn} onSignedIn=${() => this.setState({ signedIn: true, error: null }, () => this.loadSuppliers())} />
      ${error && html`<p class="muted">${error}</p>`}</main>`;
    const paging = {
      newer: cursors.length > 1 ? () => this.page(cursors.slice(0, -1)) : null,
      older: next ? () => this.page([...cursors, next]) : null,
    };
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
          <section class="card"><h2>Migration jobs, newest first</h2>
            <${JobList} jobs=${jobs} verdicts=${verdicts} selected=${openJob?.id} onControl=${this.controlJob}
              onOpen=${(job) => this.setState({ openJob: job })} paging=${paging} /></section>
          <section class="card"><h2>Accounts created per hour (last 48 hours, UTC)</h2><${HourlyChart} hours=${stats.created_per_hour} /></section>
        </div>
        ${openJob && html`<${JobDetail} job=${openJob} onClose=${() => this.setState({ openJob: null })} onError=${this.fail} />`}
        <section class="card"><h2>Failing accounts by error</h2><${ErrorGroups} groups=${stats.errors_by_code} onPick=${this.showAccount} /></section>`}
    </main>`;
  }
}

const root = document.getElementById('app');
root.textContent = ''; // the "Loading…" placeholder: Preact renders beside foreign nodes, not over them
render(html`<${App} />`, root);
