import { loadavg } from 'node:os';
import { log, V1, type Ctx } from './context.ts';
import { notRun } from './writes.ts';

// GET migration-jobs/<id>/reconciliation/ of a finished 100,000-record job. The job, its records and
// what the store holds for them (an account each with a customer, a statement, two transactions and
// a note) are written by SQL in a few INSERT … SELECT generate_series, triggers off for the load only
// (so the accounts' kept balance, which a trigger keeps, is written with them),
// rather than run through the workers: the row measures the reading, not the import.
const ID_OFFSET = 4_000_000_000;
const JOBS = `${V1}/migration-jobs/`;
const TARGET_MS = 2000;

/** The line of record g: the same shape the store side below holds. */
const RECORD = (g: string) => `jsonb_build_object(
  'account', jsonb_build_object('external_account_number', 'RC-' || lpad(${g}::text, 7, '0'),
    'customers', jsonb_build_array(jsonb_build_object('given_name', 'Ada', 'family_name', 'Lovelace'))),
  'statements', jsonb_build_array(jsonb_build_object('statement_id', 'S-' || ${g}, 'gross_amount', 120.5, 'number', 'No-' || ${g},
    'bill_period_from_date', '2024-01-01', 'bill_period_to_date', '2024-01-31', 'issued_date', '2024-02-01')),
  'transactions', jsonb_build_array(
    jsonb_build_object('transaction_id', 'C-' || ${g}, 'amount', 12.3, 'type', 'CHARGE', 'transaction_date', '2024-03-01'),
    jsonb_build_object('transaction_id', 'R-' || ${g}, 'amount', 5.05, 'type', 'CREDIT', 'transaction_date', '2024-03-01')),
  'notes', jsonb_build_array(jsonb_build_object('body', 'Migrated RC-' || ${g} || '.')))`;

function seedScript(jobId: string, supplierId: number, teamId: number, records: number): string {
  const ext = `'RC-' || lpad(g::text, 7, '0')`;
  const series = `generate_series(1, ${records}) g`;
  return `
    SET session_replication_role = replica;
    INSERT INTO migration_job_records (job_id, line, external_account_number, record, outcome, step, created, finished_at,
        file_customers, file_supply_points, file_meters, file_statements, file_transactions, file_notes, file_payment_instructions,
        file_balance_total, file_statements_gross_total)
      SELECT '${jobId}'::uuid, g, ${ext}, x.record, 'succeeded', NULL, true, now() - interval '1 hour' + g * interval '30 milliseconds',
        m.customers, m.supply_points, m.meters, m.statements, m.transactions, m.notes, m.payment_instructions, m.balance_total, m.statements_gross_total
      FROM ${series} CROSS JOIN LATERAL (SELECT ${RECORD('g')} AS record) AS x CROSS JOIN LATERAL migration_record_file_measures(x.record) AS m;
    INSERT INTO account_imports (id, supplier_id, external_account_number, data, account_id, last_attempt_outcome)
      SELECT ${ID_OFFSET} + g, ${supplierId}, ${ext}, '{}'::jsonb, ${ID_OFFSET} + g, 'created' FROM ${series};
    INSERT INTO accounts (id, number, account_import_id, supplier_id, external_account_number, operations_team_id,
                          billing_street_address, billing_country, billing_postal_code, balance)
      SELECT ${ID_OFFSET} + g, 'A-r' || lpad(g::text, 7, '0'), ${ID_OFFSET} + g, ${supplierId}, ${ext}, ${teamId},
             '1 Bench Street', 'GB', 'SW1A 1AA', -7.25 FROM ${series};
    INSERT INTO customers (account_id, position, given_name, family_name) SELECT ${ID_OFFSET} + g, 0, 'Ada', 'Lovelace' FROM ${series};
    INSERT INTO statements (account_id, statement_id, bill_period_from_date, bill_period_to_date, issued_date, number, gross_amount)
      SELECT ${ID_OFFSET} + g, 'S-' || g, '2024-01-01', '2024-01-31', '2024-02-01', 'No-' || g, 120.50 FROM ${series};
    INSERT INTO transactions (account_id, transaction_id, transaction_date, amount, type)
      SELECT ${ID_OFFSET} + g, x.p || '-' || g, '2024-03-01', x.amount, x.type
      FROM ${series}, (VALUES ('C', 12.30, 'CHARGE'), ('R', 5.05, 'CREDIT')) AS x(p, amount, type);
    INSERT INTO notes (account_id, body, created_at) SELECT ${ID_OFFSET} + g, 'Migrated RC-' || g || '.', now() FROM ${series};
    SET session_replication_role = DEFAULT;
    SELECT rebuild_migration_job_record_counts();
    UPDATE migration_jobs AS j SET state = 'completed', total_lines = ${records},
        started_at = now() - interval '1 hour', finished_at = now(),
        file_accounts = t.accounts, file_customers = t.customers, file_statements = t.statements, file_transactions = t.transactions,
        file_notes = t.notes, file_balance_total = t.balance_total, file_statements_gross_total = t.gross,
        control_totals = jsonb_build_object('accounts', t.accounts, 'transactions', t.transactions,
          'balance_total', t.balance_total::text, 'statements_gross_total', t.gross::text)
      FROM (SELECT sum(m.accounts) AS accounts, sum(m.customers) AS customers, sum(m.statements) AS statements,
              sum(m.transactions) AS transactions, sum(m.notes) AS notes, sum(m.balance_total) AS balance_total,
              sum(m.statements_gross_total) AS gross
            FROM migration_job_records AS r CROSS JOIN LATERAL migration_record_file_measures(r.record) AS m
            WHERE r.job_id = '${jobId}'::uuid) AS t
      WHERE j.id = '${jobId}'::uuid;`;
}

interface Report { verdict: string; exceptions: number; measures: Array<{ measure: string; migrated: number | string }> }

export async function reconcileAtScale(ctx: Ctx, records: number): Promise<void> {
  const what = `reconciliation of a ${records.toLocaleString('en-GB')}-record job`;
  const target = `p99 < ${TARGET_MS / 1000} s`;
  if (ctx.store !== 'postgres') return notRun(ctx, what, target, 'the target is PostgreSQL\'s');
  const created = await fetch(`${ctx.server().url}${JOBS}`, {
    method: 'POST', headers: { ...ctx.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ import_supplier: ctx.tenant.supplier, operations_team_name: ctx.tenant.team }),
  });
  const job = await created.json() as { id: string };
  if (created.status !== 201) throw new Error(`POST migration-jobs/ answered ${created.status}: ${JSON.stringify(job).slice(0, 300)}`);
  const seeded = Date.now();
  const store = await ctx.target.open();
  try {
    await store.withSession(async (run) => {
      await run(seedScript(job.id, ctx.tenant.supplierId, ctx.tenant.teamId, records));
      for (const table of ['migration_job_records', 'account_imports', 'accounts', 'customers', 'statements', 'transactions', 'notes']) {
        await run(`VACUUM ANALYZE ${table}`);
      }
    });
  } finally { await store.close(); }
  log(`${ctx.store}: seeded job ${job.id} with ${records.toLocaleString('en-GB')} records in ${((Date.now() - seeded) / 1000).toFixed(0)} s`);

  // One request at a time, as the lead or the client asks: each answer is a whole pass over the job.
  const rounds = ctx.cfg.quick ? 3 : 10;
  const load = loadavg()[0]!.toFixed(1);
  const times: number[] = [];
  let last: Report | undefined;
  let failures = 0;
  for (let i = 0; i < rounds + 1; i++) {
    const t0 = performance.now();
    const res = await fetch(`${ctx.server().url}${JOBS}${job.id}/reconciliation/`, { headers: ctx.headers });
    const body = await res.json() as Report;
    const ms = performance.now() - t0;
    if (res.status !== 200) failures++;
    if (i > 0) times.push(ms); // the first answer warms the caches and the plan
    last = body;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)]!;
  const balanced = last?.verdict === 'balanced' && last.exceptions === 0;
  log(`${ctx.store}: ${what}: p50 ${at(0.5).toFixed(0)} ms, p99 ${at(0.99).toFixed(0)} ms; ${last?.verdict}, ${last?.exceptions} exceptions`);
  ctx.rows.push({
    store: ctx.store, what, connections: 1, target,
    service: { rps: 1000 / (times.reduce((a, b) => a + b, 0) / times.length), p50: Math.round(at(0.5)), p99: Math.round(at(0.99)), non2xx: failures, errors: 0 },
    pass: failures === 0 && balanced && at(0.99) < TARGET_MS,
    note: `${rounds} requests one after another after one to warm up (p99 of ${rounds} is the slowest); each record an account with a customer, `
      + `a statement, two transactions and a note, seeded by SQL; the answer: ${last?.verdict}, ${last?.exceptions} exceptions`
      + `${balanced ? '' : ' (expected balanced with none: the row fails)'}; load average ${load} when it began`,
  });
}
