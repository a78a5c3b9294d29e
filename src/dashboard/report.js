// The printable reconciliation report of one job, at /dashboard/jobs/<id>/report: the verdict first,
// the measures, the file's hash, who uploaded it, when it ran, and every exception. Same sign-in as
// the dashboard; all data from the documented endpoints through api.js.
import { Component, h, render } from './vendor/preact.js';
import htm from './vendor/htm.js';
import { get, getLines, isSignedIn, seg, SignedOut } from './api.js';
import { figure, MEASURE_NAMES, nf, utc, VERDICT_TEXT } from './format.js';
import { SignIn } from './signin.js';

const html = htm.bind(h);
const MAX_EXCEPTIONS_SHOWN = 5000;
const jobId = decodeURIComponent(location.pathname.split('/')[3] ?? '');

function Measures({ measures }) {
  return html`<table class="measures" data-testid="measures">
    <thead><tr><th>Measure</th><th class="num">Legacy control total</th><th class="num">File</th><th class="num">Migrated</th><th>Verdict</th></tr></thead>
    <tbody>${measures.map((m) => html`<tr data-testid="measure" class=${`verdict-row-${m.verdict}`}>
      <td>${MEASURE_NAMES[m.measure] ?? m.measure}</td><td class="num">${m.control === null ? 'not given' : figure(m.control)}</td>
      <td class="num">${figure(m.file)}</td><td class="num">${figure(m.migrated)}</td>
      <td><span class=${`verdict verdict-${m.verdict}`}>${m.verdict.replace('_', ' ')}</span></td></tr>`)}</tbody>
  </table>`;
}

function Exceptions({ count, lines }) {
  if (count === 0) return html`<p data-testid="no-exceptions">No exceptions: the store holds what every record sent.</p>`;
  if (!lines) return html`<p class="muted">Loading ${nf.format(count)} exceptions…</p>`;
  const shown = lines.slice(0, MAX_EXCEPTIONS_SHOWN);
  return html`<table class="exceptions" data-testid="exceptions">
      <thead><tr><th class="num">Line</th><th>External account number</th><th>Measure</th><th class="num">File</th><th class="num">Migrated</th></tr></thead>
      <tbody>${shown.map((e) => html`<tr data-testid="exception"><td class="num">${e.line}</td><td><code>${e.external_account_number ?? '—'}</code></td>
        <td>${MEASURE_NAMES[e.measure] ?? e.measure}</td><td class="num">${figure(e.file)}</td><td class="num">${figure(e.migrated)}</td></tr>`)}</tbody>
    </table>
    ${lines.length > shown.length && html`<p class="muted">The first ${nf.format(shown.length)} of ${nf.format(lines.length)} exceptions; all of them:
      <code>import-migrate reconcile ${jobId} --csv exceptions.csv</code>.</p>`}`;
}

class Report extends Component {
  state = { signedIn: isSignedIn(), report: null, job: null, exceptions: null, error: null };

  componentDidMount() { if (this.state.signedIn) this.load(); }

  async load() {
    try {
      const [report, job] = await Promise.all([get(`migration-jobs/${seg(jobId)}/reconciliation/`), get(`migration-jobs/${seg(jobId)}/`)]);
      this.setState({ report, job, error: null });
      document.title = `Reconciliation ${report.verdict}: job ${jobId}`;
      const exceptions = report.exceptions > 0 ? await getLines(`migration-jobs/${seg(jobId)}/reconciliation/exceptions/`) : [];
      this.setState({ exceptions });
    } catch (error) {
      this.setState(error instanceof SignedOut ? { signedIn: false, error: error.message } : { error: error.message });
    }
  }

  render(_props, { signedIn, report, job, exceptions, error }) {
    if (!signedIn) return html`<main class="narrow"><${SignIn} title="Reconciliation report" onSignedIn=${() => this.setState({ signedIn: true }, () => this.load())} />
      ${error && html`<p class="muted">${error}</p>`}</main>`;
    if (error) return html`<main class="report"><p class="error" role="alert">${error}</p><p><a href="/dashboard/">Back to the dashboard</a></p></main>`;
    if (!report || !job) return html`<main class="report"><p class="muted">Reconciling…</p></main>`;
    return html`<main class="report" data-testid="report">
      <nav class="no-print"><a href="/dashboard/">← Dashboard</a> <button onClick=${() => window.print()}>Print</button></nav>
      <h1>Reconciliation report</h1>
      <section class=${`verdict-banner verdict-${report.verdict}`} data-testid="verdict">
        <strong>${report.verdict.toUpperCase()}</strong> <span>${VERDICT_TEXT[report.verdict]}</span>
      </section>
      <dl class="facts">
        <dt>Migration job</dt><dd><code>${report.job_id}</code></dd>
        <dt>Import supplier</dt><dd>${report.import_supplier}</dd>
        <dt>Operations team</dt><dd>${job.operations_team_name}</dd>
        <dt>Job state</dt><dd>${report.job_state}${job.dry_run ? ' (dry run)' : ''}</dd>
        <dt>File SHA-256</dt><dd><code class="hash" data-testid="sha256">${report.file.sha256 ?? 'not known (uploads overlapped, or uploaded before hashes were kept)'}</code></dd>
        <dt>File lines</dt><dd>${nf.format(report.file.lines)} (${nf.format(report.file.unparsable_lines)} unreadable)</dd>
        <dt>Uploaded by</dt><dd data-testid="uploaded-by">${report.uploaded_by ? html`API key <code>${report.uploaded_by}</code>` : '—'}</dd>
        <dt>Created</dt><dd>${utc(job.created_at)}</dd>
        <dt>Started</dt><dd>${utc(report.started_at)}</dd>
        <dt>Finished</dt><dd>${utc(report.finished_at)}</dd>
        <dt>Reconciled</dt><dd data-testid="generated-at">${utc(report.generated_at)}</dd>
      </dl>
      <h2>Measures</h2>
      <${Measures} measures=${report.measures} />
      <h2>Exceptions (${nf.format(report.exceptions)})</h2>
      <${Exceptions} count=${report.exceptions} lines=${exceptions} />
    </main>`;
  }
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${Report} />`, root);
