import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { ResumableSha256 } from '../../src/core/resumable-sha256.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { ndjsonLines } from '../../src/modules/migration-jobs/index.ts';
import { startFakeVendor } from '../support/fake-vendor.ts';
import { onPostgres, waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// Reconciliation over HTTP: jobs run by this process's queue workers, then the legacy figures, the
// file's and the store's set side by side; the store is changed behind a finished job by SQL.
const t = await buildTestApp({ WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '1', JOB_RETRY_DELAY_SECONDS: '0' });
const db = t.store.db;
const BASE = '/v1/data-import/migration-jobs/';
const MEASURES = ['accounts', 'customers', 'supply_points', 'meters', 'statements', 'transactions', 'notes',
  'payment_instructions', 'balance_total', 'statements_gross_total'];

type Account = ReturnType<typeof accountPayload>;

/** A record: its account, one statement (gross 120.50), a charge of 12.30 and a credit of 5.05, one note. */
function record(account: Account) {
  const ext = account.external_account_number;
  return {
    account,
    statements: [{ statement_id: `S-${ext}`, bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31',
      issued_date: '2024-02-01', number: `No-${ext}`, gross_amount: 120.5 }],
    transactions: [
      { transaction_id: `C-${ext}`, transaction_date: '2024-03-01', amount: 12.3, type: 'CHARGE', reason: 'IMPORTED_CHARGE' },
      { transaction_id: `R-${ext}`, transaction_date: '2024-03-02', amount: 5.05, type: 'CREDIT', reason: 'IMPORTED_CREDIT' },
    ],
    notes: [{ body: `Migrated ${ext}.` }],
  };
}

/** The counts one record of `record()` makes, from its account's own parts. */
function countsOf(account: Account) {
  const points = (account.supply_addresses ?? []).flatMap((a) => a.supply_points ?? []);
  return {
    customers: account.customers.length, supply_points: points.length,
    meters: points.reduce((n, p) => n + ((p as { meters?: unknown[] }).meters?.length ?? 0), 0),
  };
}

async function newJob(tenant: Tenant, controlTotals?: Record<string, unknown>) {
  const res = await call(t.app, 'POST', BASE, { token: tenant.token, body: {
    import_supplier: tenant.supplier, operations_team_name: tenant.team, ...(controlTotals ? { control_totals: controlTotals } : {}),
  } });
  assert.equal(res.status, 201, res.body);
  return res.json.id as string;
}

async function upload(tenant: Tenant, id: string, text: string | Buffer, gzip = false, status = 200) {
  const res = await t.app.inject({
    method: 'POST', url: `${BASE}${id}/records/`, payload: gzip && typeof text === 'string' ? gzipSync(text) : text,
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson', ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
  });
  assert.equal(res.statusCode, status, res.body);
  return res.json() as { received: number; total_records: number };
}

async function runJob(tenant: Tenant, id: string) {
  assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).status, 200);
  await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.state === 'completed',
    `job ${id} is completed`, 60_000);
}

const report = async (tenant: Tenant, id: string) => call(t.app, 'GET', `${BASE}${id}/reconciliation/`, { token: tenant.token });

async function exceptions(tenant: Tenant, id: string, accept?: string) {
  const res = await t.app.inject({ method: 'GET', url: `${BASE}${id}/reconciliation/exceptions/`,
    headers: { authorization: `Token ${tenant.token}`, ...(accept ? { accept } : {}) } });
  assert.equal(res.statusCode, 200, res.body);
  return { type: res.headers['content-type'], body: res.body };
}
const exceptionLines = async (tenant: Tenant, id: string) =>
  (await exceptions(tenant, id)).body.split('\n').filter(Boolean).map((l) => JSON.parse(l));

/** The measures as `measure: [control, file, migrated, verdict]`, for a whole comparison. */
const measuresOf = (body: { measures: Array<{ measure: string; control: unknown; file: unknown; migrated: unknown; verdict: string }> }) =>
  Object.fromEntries(body.measures.map((m) => [m.measure, [m.control, m.file, m.migrated, m.verdict]]));

/** Two records' totals: balance -7.25 each, statements 120.50 each. */
function bookOf(a: Account, b: Account) {
  const [ca, cb] = [countsOf(a), countsOf(b)];
  return {
    accounts: 2, customers: ca.customers + cb.customers, supply_points: ca.supply_points + cb.supply_points,
    meters: ca.meters + cb.meters, statements: 2, transactions: 4, notes: 2, payment_instructions: 0,
    balance_total: '-14.50', statements_gross_total: '241.00',
  };
}

/** A job of two records, declared with their book as control totals, run and reconciled balanced. */
async function balancedJob() {
  const tenant = await createTenant(t);
  const [a, b] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
  const id = await newJob(tenant, bookOf(a, b));
  await upload(tenant, id, [record(a), record(b)].map((r) => JSON.stringify(r)).join('\n'));
  await runJob(tenant, id);
  assert.equal((await report(tenant, id)).json.verdict, 'balanced');
  return { tenant, a, b, id };
}

describe('GET migration-jobs/<id>/reconciliation/', () => {
  test('a job whose control totals match reconciles balanced; the file hash covers every upload in order', async () => {
    const tenant = await createTenant(t);
    const [a, b] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
    const book = bookOf(a, b);
    const id = await newJob(tenant, { ...book, balance_total: '-14.5', payment_instructions: undefined });
    const first = `${JSON.stringify(record(a))}\n\n`;
    const second = `${JSON.stringify(record(b))}`;
    await upload(tenant, id, first);
    await upload(tenant, id, second, true);
    assert.equal((await report(tenant, id)).json.verdict, 'incomplete');
    await runJob(tenant, id);

    const res = await report(tenant, id);
    assert.equal(res.status, 200, res.body);
    const sha256 = createHash('sha256').update(`${JSON.stringify(record(a))}\n${JSON.stringify(record(b))}\n`).digest('hex');
    const prefix = tenant.apiKey.split('.')[0];
    assert.deepEqual({ ...res.json, generated_at: 'AT', started_at: 'AT', finished_at: 'AT', measures: 'M' }, {
      job_id: id, import_supplier: tenant.supplier, generated_at: 'AT', job_state: 'completed',
      file: { sha256, lines: 2, unparsable_lines: 0 }, uploaded_by: prefix, started_at: 'AT', finished_at: 'AT',
      measures: 'M', verdict: 'balanced', exceptions: 0,
    });
    assert.deepEqual(res.json.measures.map((m: { measure: string }) => m.measure), MEASURES);
    assert.deepEqual(measuresOf(res.json), Object.fromEntries(MEASURES.map((m) => {
      const value = book[m as keyof typeof book];
      return [m, m === 'payment_instructions' ? [null, 0, 0, 'not_declared'] : [value, value, value, 'balanced']];
    })));
    assert.deepEqual(await exceptionLines(tenant, id), []);
    assert.equal((await exceptions(tenant, id, 'text/csv')).body, 'line,external_account_number,measure,file,migrated\r\n');
  });

  test('a control total off by 0.01 differs on that measure alone, with no exception line', async () => {
    const tenant = await createTenant(t);
    const [a, b] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
    const id = await newJob(tenant, { accounts: 2, balance_total: '-14.51' });
    await upload(tenant, id, [record(a), record(b)].map((r) => JSON.stringify(r)).join('\n'));
    await runJob(tenant, id);
    const res = await report(tenant, id);
    assert.equal(res.json.verdict, 'differs');
    assert.equal(res.json.exceptions, 0);
    const measures = measuresOf(res.json);
    assert.deepEqual(measures.balance_total, ['-14.51', '-14.50', '-14.50', 'differs']);
    assert.deepEqual(measures.accounts, [2, 2, 2, 'balanced']);
    assert.deepEqual(Object.entries(measures).filter(([, m]) => m[3] === 'differs').map(([name]) => name), ['balance_total']);
    assert.deepEqual(await exceptionLines(tenant, id), []);
  });

  test('a record that failed differs: not_migrated in the exceptions, its parts missing from migrated', async () => {
    const tenant = await createTenant(t);
    const [a, b] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier, { external_account_number: `-${Date.now()}` })];
    b.customers[0]!.mobile = '12';
    const book = bookOf(a, b);
    const id = await newJob(tenant, { accounts: 2, transactions: 4 });
    await upload(tenant, id, `${JSON.stringify(record(a))}\n${JSON.stringify(record(b))}\nnot json\n`);
    await runJob(tenant, id);
    const res = await report(tenant, id);
    assert.equal(res.json.verdict, 'differs');
    assert.deepEqual(res.json.file, { sha256: res.json.file.sha256, lines: 3, unparsable_lines: 1 });
    const measures = measuresOf(res.json);
    const ca = countsOf(a);
    assert.deepEqual(measures.accounts, [2, 3, 1, 'differs']);
    assert.deepEqual(measures.transactions, [4, 4, 2, 'differs']);
    assert.deepEqual(measures.customers, [null, book.customers, ca.customers, 'differs']);
    assert.deepEqual(measures.balance_total, [null, '-14.50', '-7.25', 'differs']);
    assert.deepEqual(measures.statements_gross_total, [null, '241.00', '120.50', 'differs']);
    assert.equal(res.json.exceptions, 2);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 2, external_account_number: b.external_account_number, measure: 'not_migrated', file: null, migrated: null },
      { line: 3, external_account_number: null, measure: 'not_migrated', file: null, migrated: null },
    ]);
    const csv = await exceptions(tenant, id, 'text/csv');
    assert.match(String(csv.type), /^text\/csv/);
    assert.equal(csv.body, 'line,external_account_number,measure,file,migrated\r\n'
      + `2,'${b.external_account_number},not_migrated,,\r\n3,,not_migrated,,\r\n`);
  });

  test('a record that failed on an account the store holds is a failed exception, and the report differs, though every count and sum agrees', async () => {
    const { tenant, a, b } = await balancedJob();
    // The book again, with a note on A's charge: the store keeps its own (the same id, type, amount and date), the record fails.
    const moved = record(a);
    Object.assign(moved.transactions[0]!, { note: 'Re-read on site.' });
    const id = await newJob(tenant);
    await upload(tenant, id, `${JSON.stringify(moved)}\n${JSON.stringify(record(b))}\n`);
    await runJob(tenant, id);
    const failed = (await call(t.app, 'GET', `${BASE}${id}/records/?outcome=failed`, { token: tenant.token })).body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(failed.map((r: { line: number; errors: Array<{ code: string }> }) => [r.line, r.errors[0]!.code]), [[1, 'conflict']]);
    const res = await report(tenant, id);
    assert.deepEqual(Object.values(measuresOf(res.json)).map((m) => m[3]), MEASURES.map(() => 'not_declared'));
    assert.equal(res.json.verdict, 'differs');
    assert.equal(res.json.exceptions, 1);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: a.external_account_number, measure: 'failed', file: null, migrated: null },
    ]);
    assert.equal((await exceptions(tenant, id, 'text/csv')).body, 'line,external_account_number,measure,file,migrated\r\n'
      + `1,${a.external_account_number},failed,,\r\n`);
  });

  test('an account named on two lines counts once: the duplicate line sees nothing of it and differs as not migrated', async () => {
    const tenant = await createTenant(t);
    const a = accountPayload(tenant.supplier);
    const twin = { ...record(accountPayload(tenant.supplier, { external_account_number: a.external_account_number })), transactions: record(a).transactions };
    // The legacy system's figures count the doubled account twice, as its export does: they must not balance.
    const id = await newJob(tenant, { accounts: 2, transactions: 4, balance_total: '-14.50' });
    await upload(tenant, id, `${JSON.stringify(record(a))}\n${JSON.stringify(twin)}\n`);
    await runJob(tenant, id);
    const res = await report(tenant, id);
    assert.equal(res.json.verdict, 'differs');
    const measures = measuresOf(res.json);
    assert.deepEqual(measures.accounts, [2, 2, 1, 'differs']);
    assert.deepEqual(measures.transactions, [4, 4, 2, 'differs']);
    assert.deepEqual(measures.balance_total, ['-14.50', '-14.50', '-7.25', 'differs']);
    assert.deepEqual(measures.customers, [null, countsOf(a).customers + twin.account.customers.length, countsOf(a).customers, 'differs']);
    assert.equal(res.json.exceptions, 1);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 2, external_account_number: a.external_account_number, measure: 'not_migrated', file: null, migrated: null },
    ]);
  });

  test('transactions changed in the store after the run differ, read back by their keys', async () => {
    const { tenant, a, b, id } = await balancedJob();

    await sql`UPDATE transactions SET amount = amount + 0.01 WHERE transaction_id = ${`C-${a.external_account_number}`}`.execute(db);
    await sql`DELETE FROM transactions WHERE transaction_id = ${`R-${b.external_account_number}`}`.execute(db);
    const res = await report(tenant, id);
    assert.equal(res.json.verdict, 'differs');
    const measures = measuresOf(res.json);
    // A's charge is still there, but not as the line sent it: it no longer counts.
    assert.deepEqual(measures.transactions, [4, 4, 2, 'differs']);
    assert.deepEqual(measures.balance_total, ['-14.50', '-14.50', '-19.56', 'differs']);
    assert.deepEqual(measures.statements, [2, 2, 2, 'balanced']);
    assert.equal(res.json.exceptions, 4);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: a.external_account_number, measure: 'transactions', file: 2, migrated: 1 },
      { line: 1, external_account_number: a.external_account_number, measure: 'balance_total', file: '-7.25', migrated: '-7.26' },
      { line: 2, external_account_number: b.external_account_number, measure: 'transactions', file: 2, migrated: 1 },
      { line: 2, external_account_number: b.external_account_number, measure: 'balance_total', file: '-7.25', migrated: '-12.30' },
    ]);
    assert.equal((await exceptions(tenant, id, 'text/csv')).body, 'line,external_account_number,measure,file,migrated\r\n'
      + `1,${a.external_account_number},transactions,2,1\r\n1,${a.external_account_number},balance_total,-7.25,-7.26\r\n`
      + `2,${b.external_account_number},transactions,2,1\r\n2,${b.external_account_number},balance_total,-7.25,-12.30\r\n`);
  });

  test('a change in the store that leaves every count and sum as it was still shows: items are counted only as the line sent them', async () => {
    const { tenant, a, b, id } = await balancedJob();
    const c = await balancedJob();
    const [extA, extB, extC] = [a.external_account_number, b.external_account_number, c.a.external_account_number];
    // A: the charge and the credit each 1.00 more, so its balance stays; B: the charge dated otherwise
    // and its statement's period moved; C (another job's): only the account's kept balance changed.
    await sql`UPDATE transactions SET amount = amount + 1 WHERE transaction_id IN (${`C-${extA}`}, ${`R-${extA}`})`.execute(db);
    await sql`UPDATE transactions SET transaction_date = '2024-03-05' WHERE transaction_id = ${`C-${extB}`}`.execute(db);
    await sql`UPDATE statements SET bill_period_to_date = '2024-01-30' WHERE statement_id = ${`S-${extB}`}`.execute(db);
    const res = await report(tenant, id);
    assert.equal(res.json.verdict, 'differs');
    const measures = measuresOf(res.json);
    assert.deepEqual(measures.transactions, [4, 4, 1, 'differs']);
    assert.deepEqual(measures.statements, [2, 2, 1, 'differs']);
    assert.deepEqual(measures.balance_total, ['-14.50', '-14.50', '-14.50', 'balanced']);
    assert.deepEqual(measures.statements_gross_total, ['241.00', '241.00', '241.00', 'balanced']);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: extA, measure: 'transactions', file: 2, migrated: 0 },
      { line: 2, external_account_number: extB, measure: 'statements', file: 1, migrated: 0 },
      { line: 2, external_account_number: extB, measure: 'transactions', file: 2, migrated: 1 },
    ]);
    // The balance an account read answers is the one kept on the account: changed alone, it shows.
    await sql`UPDATE accounts SET balance = balance + 100 WHERE external_account_number = ${extC}`.execute(db);
    const other = await report(c.tenant, c.id);
    assert.deepEqual(measuresOf(other.json).balance_total, ['-14.50', '-14.50', '85.50', 'differs']);
    assert.deepEqual(await exceptionLines(c.tenant, c.id), [
      { line: 1, external_account_number: extC, measure: 'balance_total', file: '-7.25', migrated: '92.75' },
    ]);
  });

  test('a record that kept an account imported before with other data (drift, warned) is an account_differs exception; one whose account is marked to skip is skipped', async () => {
    const { tenant, a, b } = await balancedJob();
    // The book again, with A's billing locality changed in the legacy system since: the store keeps
    // the account as it was. And C, staged and marked to skip by the team.
    const changed = record({ ...a, billing_address: { ...a.billing_address, locality: 'Bath' } });
    // B changed too, and its charge sent again with a note the store's lacks: warned, then failed at transactions.
    const changedB = record({ ...b, billing_address: { ...b.billing_address, locality: 'Bath' } });
    Object.assign(changedB.transactions[0]!, { note: 'Re-read on site.' });
    const c = accountPayload(tenant.supplier);
    await call(t.app, 'POST', '/v1/data-import/account-import-process/create-or-update/', { token: tenant.token, body: c });
    await admin.skipAccount(db, tenant.supplier, c.external_account_number);
    const id = await newJob(tenant);
    await upload(tenant, id, [changed, changedB, { account: c }].map((r) => JSON.stringify(r)).join('\n'));
    await runJob(tenant, id);
    const res = await report(tenant, id);
    assert.deepEqual([res.json.verdict, res.json.exceptions], ['differs', 4]);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: a.external_account_number, measure: 'account_differs', file: null, migrated: null },
      { line: 2, external_account_number: b.external_account_number, measure: 'failed', file: null, migrated: null },
      { line: 2, external_account_number: b.external_account_number, measure: 'account_differs', file: null, migrated: null },
      { line: 3, external_account_number: c.external_account_number, measure: 'skipped', file: null, migrated: null },
    ]);
  });

  test('payment instructions: a record sending one counts when its account holds an active one; deactivated in the store, it differs', async () => {
    const tenant = await createTenant(t);
    const vendor = await startFakeVendor();
    const code = unique('VEND');
    await admin.createVendor(db, code, { kind: 'http', url: vendor.url, timeoutMs: 2000 });
    const [a, b] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
    const id = await newJob(tenant, { ...bookOf(a, b), payment_instructions: 1 });
    vendor.set(`PI-${a.external_account_number}`, 'found');
    const withInstruction = { ...record(a), payment_instruction: { vendor: code, reference: `PI-${a.external_account_number}`, type: 'CARD' } };
    await upload(tenant, id, [withInstruction, record(b)].map((r) => JSON.stringify(r)).join('\n'));
    await runJob(tenant, id);
    const balanced = await report(tenant, id);
    assert.deepEqual([balanced.json.verdict, measuresOf(balanced.json).payment_instructions], ['balanced', [1, 1, 1, 'balanced']]);
    await sql`UPDATE payment_instructions SET active = false WHERE account_id =
      (SELECT id FROM accounts WHERE external_account_number = ${a.external_account_number})`.execute(db);
    const differs = await report(tenant, id);
    assert.deepEqual([differs.json.verdict, measuresOf(differs.json).payment_instructions], ['differs', [1, 1, 0, 'differs']]);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: a.external_account_number, measure: 'payment_instructions', file: 1, migrated: 0 },
    ]);
  });

  test('items the line does not name count in no keyed measure, but every transaction counts in the balance', async () => {
    const { tenant, a, b, id } = await balancedJob();

    // Account a gains a statement, a charge of 1.00 and a note the file never sent; b loses its note.
    const ofA = sql`(SELECT id FROM accounts WHERE external_account_number = ${a.external_account_number})`;
    await sql`INSERT INTO statements (account_id, statement_id, bill_period_from_date, bill_period_to_date, issued_date, number, gross_amount)
      VALUES (${ofA}, 'NOT-IN-FILE', '2024-02-01', '2024-02-29', '2024-03-01', 'No-extra', 99.99)`.execute(db);
    await sql`INSERT INTO transactions (account_id, transaction_id, transaction_date, amount, type)
      VALUES (${ofA}, 'NOT-IN-FILE', '2024-03-03', 1.00, 'CHARGE')`.execute(db);
    await sql`INSERT INTO notes (account_id, body, created_at) VALUES (${ofA}, 'Not in the file.', now())`.execute(db);
    await sql`DELETE FROM notes WHERE body = ${`Migrated ${b.external_account_number}.`}`.execute(db);

    const res = await report(tenant, id);
    const measures = measuresOf(res.json);
    assert.deepEqual(measures.statements, [2, 2, 2, 'balanced']);
    assert.deepEqual(measures.statements_gross_total, ['241.00', '241.00', '241.00', 'balanced']);
    assert.deepEqual(measures.transactions, [4, 4, 4, 'balanced']);
    assert.deepEqual(measures.balance_total, ['-14.50', '-14.50', '-15.50', 'differs']);
    assert.deepEqual(measures.notes, [2, 2, 1, 'differs']);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: a.external_account_number, measure: 'balance_total', file: '-7.25', migrated: '-8.25' },
      { line: 2, external_account_number: b.external_account_number, measure: 'notes', file: 1, migrated: 0 },
    ]);
    assert.equal(res.json.exceptions, 2);
  });

  test('an unfinished job is incomplete', async () => {
    const tenant = await createTenant(t);
    const a = accountPayload(tenant.supplier);
    const id = await newJob(tenant, { accounts: 1 });
    await upload(tenant, id, JSON.stringify(record(a)));
    const res = await report(tenant, id);
    assert.equal(res.json.job_state, 'open');
    assert.equal(res.json.verdict, 'incomplete');
    assert.deepEqual(measuresOf(res.json).accounts, [1, 1, 0, 'differs']);
    assert.deepEqual(await exceptionLines(tenant, id), [
      { line: 1, external_account_number: a.external_account_number, measure: 'not_migrated', file: null, migrated: null },
    ]);
  });

  test('a started job that is paused is incomplete; once cancelled it has finished, and what never ran differs as not migrated', async () => {
    const tenant = await createTenant(t);
    const [a, b] = [accountPayload(tenant.supplier), accountPayload(tenant.supplier)];
    const id = await newJob(tenant, { accounts: 2 });
    await upload(tenant, id, `${JSON.stringify(record(a))}\n${JSON.stringify(record(b))}`);
    // The supplier's pause holds the started job's records unclaimed: nothing of it runs.
    await admin.setSupplier(db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    try {
      assert.equal((await call(t.app, 'POST', `${BASE}${id}/start/`, { token: tenant.token })).json.state, 'paused');
      const paused = (await report(tenant, id)).json;
      assert.deepEqual([paused.job_state, paused.verdict, measuresOf(paused).accounts], ['paused', 'incomplete', [2, 2, 0, 'differs']]);

      const cancelled = await call(t.app, 'POST', `${BASE}${id}/cancel/`, { token: tenant.token });
      assert.deepEqual([cancelled.status, cancelled.json.state], [200, 'cancelled']);
      const res = (await report(tenant, id)).json;
      assert.deepEqual([res.job_state, res.verdict, res.exceptions], ['cancelled', 'differs', 2]);
      assert.deepEqual(measuresOf(res).accounts, [2, 2, 0, 'differs']);
      assert.deepEqual(await exceptionLines(tenant, id), [a, b].map((account, at) => (
        { line: at + 1, external_account_number: account.external_account_number, measure: 'not_migrated', file: null, migrated: null })));
    } finally {
      await admin.setSupplier(db, tenant.supplier, { status: 'ongoing' });
      await t.directory.sync();
    }
  });

  test('another organisation\'s job, or an unknown one, is 404 not_found; a bad control total is 400', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const id = await newJob(tenant);
    for (const path of ['reconciliation/', 'reconciliation/exceptions/']) {
      for (const jobId of [id, '00000000-0000-4000-8000-000000000000']) {
        const res = await call(t.app, 'GET', `${BASE}${jobId}/${path}`, { token: other.token });
        assert.equal(res.status, 404);
        assert.deepEqual(res.json, { detail: `No migration job "${jobId}".`, code: 'not_found' });
      }
    }
    const res = await call(t.app, 'POST', BASE, { token: tenant.token, body: {
      import_supplier: tenant.supplier, operations_team_name: tenant.team, control_totals: { balance_total: -1.5, accounts: 1 },
    } });
    assert.equal(res.status, 400);
    assert.equal(res.json.code, 'invalid');
    assert.deepEqual(res.json.errors.map((e: { attr: string }) => e.attr), ['control_totals.balance_total']);
  });
});

describe('reconciliation planned without statistics', () => {
  // Right after a first big job, or with autovacuum off, a server has no statistics for the tables it
  // just filled, and plans as if the job had one record, with nested loops. The report's figures are
  // put together by grouping, so such a plan costs what any other does; joined to the records, each
  // table's figures were computed again for every record: 3,000 records ran past the statement's
  // time limit (a 500). This test's database was made for it, and nothing has analysed its tables.
  test('a 600-record job just run reconciles, and lists its exceptions, within seconds', async () => {
    const tenant = await createTenant(t);
    const accounts = Array.from({ length: 600 }, () => accountPayload(tenant.supplier));
    const id = await newJob(tenant);
    await upload(tenant, id, accounts.map((a) => JSON.stringify(record(a))).join('\n'));
    await runJob(tenant, id);
    const started = Date.now();
    const res = await report(tenant, id);
    assert.equal(res.status, 200, res.body);
    assert.deepEqual([res.json.verdict, res.json.exceptions, measuresOf(res.json).transactions], ['balanced', 0, [null, 1200, 1200, 'not_declared']]);
    assert.equal((await exceptions(tenant, id)).body, '');
    const took = Date.now() - started;
    assert.ok(took < 3000, `took ${took} ms`);
  });
});

describe('the file hash', () => {
  test('an upload cut off and resumed hashes as the whole file, and counts each kept line once', async () => {
    const tenant = await createTenant(t);
    const accounts = Array.from({ length: 40 }, () => accountPayload(tenant.supplier));
    const lines = accounts.map((a) => JSON.stringify(record(a)));
    const whole = `${lines.join('\n')}\n`;
    const id = await newJob(tenant);
    // A gzip stream cut short: the complete lines before the cut are kept, the job says how many.
    const gz = gzipSync(whole);
    const cut = await upload(tenant, id, gz.subarray(0, Math.floor(gz.length * 0.6)), true, 400);
    assert.ok(cut.total_records > 0 && cut.total_records < 40, JSON.stringify(cut));
    await upload(tenant, id, `${lines.slice(cut.total_records).join('\n')}\n`);
    const res = await report(tenant, id);
    assert.deepEqual(res.json.file, { sha256: createHash('sha256').update(whole).digest('hex'), lines: 40, unparsable_lines: 0 });
    assert.deepEqual(measuresOf(res.json).transactions, [null, 80, 0, 'differs']);
    assert.deepEqual(measuresOf(res.json).balance_total, [null, '-290.00', '0.00', 'differs']);
  });

  test('two uploads to one job at once leave no file hash (null), and both count', async () => {
    const tenant = await createTenant(t);
    const id = await newJob(tenant);
    const body = new PassThrough();
    const first = t.app.inject({ method: 'POST', url: `${BASE}${id}/records/`, payload: body,
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' } });
    // 500 lines make a batch: once it is written, another upload comes between it and the rest.
    body.write(Array.from({ length: 500 }, (_, i) => `${JSON.stringify({ account: { external_account_number: `A-${i}` } })}\n`).join(''));
    await waitUntil(async () => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json.counts.total === 500,
      'the first batch is written', 30_000);
    await upload(tenant, id, `${JSON.stringify({ account: { external_account_number: 'B-1' } })}\n`);
    body.end(`${JSON.stringify({ account: { external_account_number: 'A-500' } })}\n`);
    assert.equal((await first).statusCode, 200);
    const res = await report(tenant, id);
    assert.deepEqual(res.json.file, { sha256: null, lines: 502, unparsable_lines: 0 });
    assert.deepEqual(measuresOf(res.json).accounts, [null, 502, 0, 'differs']);
  });

  test('the lines are hashed as they stream, blank lines left out, a line too long to keep included', async () => {
    const text = 'one\n\n  \r\n{"a":1}\r\n' + 'x'.repeat(50) + '\nlast';
    for (const size of [1, 3, 7, 64, text.length]) {
      const chunks = Array.from({ length: Math.ceil(text.length / size) }, (_, i) => Buffer.from(text.slice(i * size, (i + 1) * size)));
      const hash = await ResumableSha256.create();
      const kinds: string[] = [];
      for await (const line of ndjsonLines(Readable.from(chunks), { maxLineBytes: 20, maxTotalBytes: 1000, maxBlankLines: 10 }, (b) => hash.update(b))) {
        kinds.push(line.kind);
      }
      assert.deepEqual(kinds, ['text', 'text', 'too_long', 'text']);
      const expected = `one\n{"a":1}\r\n${'x'.repeat(50)}\nlast\n`;
      assert.equal(hash.hex(), createHash('sha256').update(expected).digest('hex'), `chunks of ${size}`);
    }
  });
});

// The store's side of a job is read in line ranges at once (Store.readInSlices); the HTTP tests above
// run through it on both stores. Here, what the slices share and what bounds them.
describe('a read in slices', () => {
  const jobsNow = async (executor: typeof db) => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM migration_jobs`.execute(executor)).rows[0]!.n;
  /** Each slice's session and snapshot, and the jobs it counts after `meanwhile` (run by the first slice) is done. */
  const sliceViews = (store: typeof t.store, meanwhile = async (): Promise<unknown> => undefined) => store.readInSlices(2, async (trx, slice) => {
    const { rows: [session] } = await sql<{ pid: number; snapshot: string }>`SELECT pg_backend_pid() AS pid, pg_current_snapshot()::text AS snapshot`.execute(trx);
    if (slice === 0) await meanwhile();
    return { slice, ...session!, jobs: await jobsNow(trx) };
  });

  test('the slices share one snapshot, each on its own session on PostgreSQL; results in slice order', async () => {
    const views = await sliceViews(t.store);
    assert.deepEqual(views.map((v) => v.slice), [0, 1]);
    assert.equal(views[0]!.snapshot, views[1]!.snapshot);
    assert.equal(new Set(views.map((v) => v.pid)).size, onPostgres ? 2 : 1);
  });

  test('a slice that begins after a commit still reads the moment the first slice began', { skip: !onPostgres && 'PGlite has one session' }, async () => {
    // A pool of 4 with 3 lent out: the second slice waits for a connection until the first slice has
    // seen a job committed and given one back.
    const small = await openStore({ databaseUrl: t.config.databaseUrl, poolSize: 4 });
    const tenant = await createTenant(t);
    const giveBack: Array<() => void> = [];
    const held = Array.from({ length: 3 }, () => small.db.connection().execute(() => new Promise<void>((resolve) => { giveBack.push(resolve); })));
    try {
      await waitUntil(async () => giveBack.length === 3, 'three connections lent out');
      const before = await jobsNow(db);
      const views = await sliceViews(small, async () => {
        await newJob(tenant);
        assert.equal(await jobsNow(db), before + 1);
        giveBack.pop()!();
      });
      assert.deepEqual(views.map((v) => [v.slice, v.jobs]), [[0, before], [1, before]]);
      assert.notEqual(views[0]!.pid, views[1]!.pid);
    } finally {
      giveBack.forEach((release) => release());
      await Promise.all(held);
      await small.close();
    }
  });

  test('a slice that fails fails the read, and the sessions go back to the pool', async () => {
    await assert.rejects(t.store.readInSlices(2, async (trx, slice) => {
      await sql`SELECT ${slice}::int`.execute(trx);
      if (slice === 1) throw new Error('slice 1 failed');
      return slice;
    }), /slice 1 failed/);
    assert.deepEqual(await t.store.readInSlices(2, async (_trx, slice) => slice), [0, 1]);
  });

  test('past half the pool, the slices run one after another in one session', { skip: !onPostgres && 'PGlite has one session' }, async () => {
    const small = await openStore({ databaseUrl: t.config.databaseUrl, poolSize: 3 });
    try {
      const views = await sliceViews(small);
      assert.equal(views[0]!.pid, views[1]!.pid);
    } finally {
      await small.close();
    }
  });
});
