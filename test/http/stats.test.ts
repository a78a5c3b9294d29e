import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { skipAccount } from '../../src/modules/admin/index.ts';
import { holdCreate, processAccount, stage, stageAndCreate, supplierIdOf } from '../support/imports.ts';
import { buildApp } from '../../src/app.ts';
import { buildTestApp, call, createTenant, unique, type Tenant } from '../support/test-app.ts';

// GET stats/<supplier>/ (D14) and the failures filter of the lists, on PGlite and on PostgreSQL.

const METRICS_TOKEN = `scrape-${'x'.repeat(32)}`;
const t = await buildTestApp({ METRICS_TOKEN });
const db = t.store.db;

const stats = (tenant: Tenant, supplier = tenant.supplier) =>
  call(t.app, 'GET', `/v1/data-import/stats/${encodeURIComponent(supplier)}/`, { token: tenant.token });

/** The store's current UTC hour, as hours since the epoch (the endpoint buckets on the store's clock). */
async function storeHour(): Promise<number> {
  const { rows } = await sql<{ h: number }>`SELECT floor(extract(epoch FROM now()) / 3600)::int AS h`.execute(db);
  return rows[0]!.h;
}
const label = (h: number) => `${new Date(h * 3_600_000).toISOString().slice(0, 13)}:00:00Z`;
/** 48 empty hours ending at `now`, with `counts` (hours ago → count) filled in. */
function hoursEndingAt(now: number, counts: Record<number, number> = {}) {
  return Array.from({ length: 48 }, (_, i) => ({ hour: label(now - 47 + i), count: counts[47 - i] ?? 0 }));
}

/** A staged account whose create fails validation at `attr` (its staged data broken behind the API's back). */
async function failingAccount(tenant: Tenant, path: string[], value: unknown) {
  const payload = await stage(t, tenant);
  const ext = payload.external_account_number;
  await sql`UPDATE account_imports SET data = jsonb_set(data, ${`{${path.join(',')}}`}::text[], ${JSON.stringify(value)}::jsonb)
    WHERE supplier_id = ${await supplierIdOf(t, tenant.supplier)} AND external_account_number = ${ext}`.execute(db);
  const res = await processAccount(t, tenant, ext);
  assert.equal(res.status, 400, res.body);
  assert.equal(res.json.code, 'account_failed_validation');
  return ext;
}

/** Bare import rows with attempts written straight to the store: the grouping without a create each. */
async function attemptRows(supplierId: number, rows: Array<{ ext: string; attempts: Array<{ outcome: string; code?: string; attr?: string }> }>) {
  for (const row of rows) {
    await sql`INSERT INTO account_imports (supplier_id, external_account_number, data) VALUES (${supplierId}, ${row.ext}, '{}')`.execute(db);
    for (const a of row.attempts) {
      await sql`INSERT INTO create_attempts (supplier_id, external_account_number, dry_run, outcome, error_code, error_detail, error_attr, started_at)
        VALUES (${supplierId}, ${row.ext}, false, ${a.outcome}, ${a.code ?? null}, ${a.code ? `detail of ${a.code}` : null}, ${a.attr ?? null}, now())`.execute(db);
    }
  }
}

describe('GET stats/<supplier>/ (D14)', () => {
  test('a supplier with nothing: zero counts, 48 empty hours, no groups, no jobs', async () => {
    const tenant = await createTenant(t);
    const before = await storeHour();
    const res = await stats(tenant);
    if (await storeHour() !== before) return void assert.fail('the hour turned during the test: run it again');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, {
      import_supplier: tenant.supplier, status: 'ongoing',
      counts: { staged: 0, in_progress: 0, imported: 0, failed: 0, skipped: 0, rejected: 0 },
      created_per_hour: hoursEndingAt(before), errors_by_code: [], jobs: [],
    });
  });

  test('counts: staged, imported, failed (latest attempt), skipped, in progress; error groups from real creates', async () => {
    const tenant = await createTenant(t);
    const { payload: created } = await stageAndCreate(t, tenant);
    const plain = await stage(t, tenant);
    const mobileA = await failingAccount(tenant, ['customers', '0', 'mobile'], '12');
    const mobileB = await failingAccount(tenant, ['customers', '0', 'mobile'], 'x');
    const country = await failingAccount(tenant, ['billing_address', 'country'], 'ZZ');
    // A failure with no field: an unknown team names operations_team_name, a concurrency refusal none.
    const team = await stage(t, tenant);
    assert.equal((await processAccount(t, tenant, team.external_account_number, { operations_team_name: unique('no-team') })).status, 400);
    // Failed, then a dry run that passed: its latest attempt did not fail, so it is not failing now.
    const recovered = await failingAccount(tenant, ['customers', '0', 'mobile'], '12');
    await sql`UPDATE account_imports SET data = (SELECT data FROM account_imports WHERE external_account_number = ${plain.external_account_number})
        || jsonb_build_object('external_account_number', ${recovered}::text)
      WHERE external_account_number = ${recovered}`.execute(db);
    assert.equal((await processAccount(t, tenant, recovered, { dry_run: true })).json.code, 'dry_run_rolled_back');
    const skipped = await failingAccount(tenant, ['customers', '0', 'mobile'], '12');
    await skipAccount(db, tenant.supplier, skipped);
    // A create "running" on another instance holds the account's advisory lock.
    const running = await stage(t, tenant);
    const release = await holdCreate(t, tenant.supplier, running.external_account_number);
    let res;
    try {
      res = await stats(tenant);
    } finally {
      await release();
    }
    assert.equal(res.status, 200);
    const current = await storeHour();
    assert.deepEqual(res.json, {
      import_supplier: tenant.supplier, status: 'ongoing',
      counts: { staged: 7, in_progress: 1, imported: 1, failed: 4, skipped: 1, rejected: 0 },
      created_per_hour: hoursEndingAt(current, { 0: 1 }),
      errors_by_code: [
        { code: 'invalid_phone_number', attr: 'customers.0.mobile', count: 2, examples: [mobileA, mobileB].sort() },
        { code: 'invalid_country', attr: 'billing_address.country', count: 1, examples: [country] },
        { code: 'operations_team_not_found', attr: 'operations_team_name', count: 1, examples: [team.external_account_number] },
      ],
      jobs: [],
    });
    assert.ok(created.external_account_number);
    // Once the lock is gone, nothing is in progress.
    assert.equal((await stats(tenant)).json.counts.in_progress, 0);
  });

  test('a group\'s code is the first error\'s: the attempt keeps it beside the answer\'s code, which status and lists still show', async () => {
    const tenant = await createTenant(t);
    const mobile = await failingAccount(tenant, ['customers', '0', 'mobile'], '12');
    const team = await stage(t, tenant);
    await processAccount(t, tenant, team.external_account_number, { operations_team_name: 'no-such-team' });
    const attempts = await db.selectFrom('create_attempts').select(['external_account_number', 'error_code', 'error_field_code', 'error_attr'])
      .where('supplier_id', '=', await supplierIdOf(t, tenant.supplier)).orderBy('id').execute();
    assert.deepEqual(attempts, [
      { external_account_number: mobile, error_code: 'account_failed_validation', error_field_code: 'invalid_phone_number', error_attr: 'customers.0.mobile' },
      { external_account_number: team.external_account_number, error_code: 'operations_team_not_found', error_field_code: 'operations_team_not_found', error_attr: 'operations_team_name' },
    ]);
    assert.deepEqual((await stats(tenant)).json.errors_by_code, [
      { code: 'invalid_phone_number', attr: 'customers.0.mobile', count: 1, examples: [mobile] },
      { code: 'operations_team_not_found', attr: 'operations_team_name', count: 1, examples: [team.external_account_number] },
    ]);
    const status = await call(t.app, 'GET', `/v1/data-import/account-transfer-status/${tenant.supplier}/${mobile}/`, { token: tenant.token });
    assert.deepEqual(status.json, { status: 'UNKNOWN', service_account_number: '', last_error: { code: 'account_failed_validation', detail: 'The account data failed validation.' } });
    const failed = await call(t.app, 'GET', `/v1/data-import/pending-account-import-processes/${tenant.supplier}/?state=failed&page_size=1`, { token: tenant.token });
    assert.deepEqual(failed.json[0].last_error, { code: 'account_failed_validation', attr: 'customers.0.mobile', detail: 'The account data failed validation.' });
  });

  test('created_per_hour: 48 UTC hours, oldest first, every hour present; older and other suppliers\' accounts left out', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const otherId = await supplierIdOf(t, other.supplier);
    const teamId = (await db.selectFrom('operations_teams').select('id').where('name', '=', tenant.team).executeTakeFirstOrThrow()).id;
    const now = await storeHour();
    // Hours ago → accounts created in that hour: the first and last minute of an hour fall in it.
    const plan: Array<[number, number, number]> = [[0, 0, supplierId], [3, 59, supplierId], [3, 0, supplierId], [47, 0, supplierId],
      [47, 59, supplierId], [48, 59, supplierId], [100, 0, supplierId], [5, 30, otherId]];
    for (const [ago, minute, supplier] of plan) {
      const ext = unique('HOUR');
      const seconds = (now - ago) * 3600 + minute * 60;
      const { rows } = await sql<{ id: number }>`INSERT INTO account_imports (supplier_id, external_account_number, data)
        VALUES (${supplier}, ${ext}, '{}') RETURNING id`.execute(db);
      const { rows: account } = await sql<{ id: number }>`INSERT INTO accounts (number, account_import_id, supplier_id, external_account_number, operations_team_id,
          billing_street_address, billing_country, billing_postal_code, created_at)
        VALUES (${`A-${ext.slice(-8).toUpperCase()}`}, ${rows[0]!.id}, ${supplier}, ${ext}, ${teamId}, '1 Road', 'GB', 'BS1 5TY', to_timestamp(${seconds}::float8))
        RETURNING id`.execute(db);
      await sql`UPDATE account_imports SET account_id = ${account[0]!.id} WHERE id = ${rows[0]!.id}`.execute(db);
    }
    const res = await stats(tenant);
    if (await storeHour() !== now) return void assert.fail('the hour turned during the test: run it again');
    assert.deepEqual(res.json.created_per_hour, hoursEndingAt(now, { 0: 1, 3: 2, 47: 2 }));
    assert.equal(res.json.created_per_hour[0].hour, label(now - 47));
    assert.match(res.json.created_per_hour[47].hour, /^\d{4}-\d{2}-\d{2}T\d{2}:00:00Z$/);
    assert.deepEqual(res.json.counts, { staged: 0, in_progress: 0, imported: 7, failed: 0, skipped: 0, rejected: 0 });
  });

  test('errors_by_code: the latest attempt decides; largest first, then code and attr; at most 20 groups of 5 examples', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const rows: Parameters<typeof attemptRows>[1] = [];
    // 7 accounts failing with (big_error, a.b): the largest group, 5 examples in number order.
    for (let i = 7; i >= 1; i--) rows.push({ ext: `BIG-${i}`, attempts: [{ outcome: 'failed', code: 'big_error', attr: 'a.b' }] });
    // The same code at another attr is another group; no attr is a group of its own (attr null).
    rows.push({ ext: 'OTHER-ATTR', attempts: [{ outcome: 'failed', code: 'big_error', attr: 'a.c' }] });
    rows.push({ ext: 'NO-ATTR-1', attempts: [{ outcome: 'failed', code: 'big_error' }] });
    rows.push({ ext: 'NO-ATTR-2', attempts: [{ outcome: 'failed', code: 'big_error' }] });
    // The latest attempt counts: an older failure then a newer different one; an old failure then success.
    rows.push({ ext: 'MOVED', attempts: [{ outcome: 'failed', code: 'big_error', attr: 'a.b' }, { outcome: 'failed', code: 'code_09', attr: 'x' }] });
    rows.push({ ext: 'PASSED', attempts: [{ outcome: 'failed', code: 'big_error', attr: 'a.b' }, { outcome: 'dry_run_rolled_back' }] });
    // 20 single-account groups code_00 … code_19 (code_09 has two with MOVED): 23 groups in all.
    for (let i = 0; i < 20; i++) rows.push({ ext: `ONE-${i}`, attempts: [{ outcome: 'failed', code: `code_${String(i).padStart(2, '0')}`, attr: 'x' }] });
    await attemptRows(supplierId, rows);
    const res = await stats(tenant);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.errors_by_code, [
      { code: 'big_error', attr: 'a.b', count: 7, examples: ['BIG-1', 'BIG-2', 'BIG-3', 'BIG-4', 'BIG-5'] },
      { code: 'big_error', attr: null, count: 2, examples: ['NO-ATTR-1', 'NO-ATTR-2'] },
      { code: 'code_09', attr: 'x', count: 2, examples: ['MOVED', 'ONE-9'] },
      { code: 'big_error', attr: 'a.c', count: 1, examples: ['OTHER-ATTR'] },
      ...['00', '01', '02', '03', '04', '05', '06', '07', '08', '10', '11', '12', '13', '14', '15', '16']
        .map((n) => ({ code: `code_${n}`, attr: 'x', count: 1, examples: [`ONE-${Number(n)}`] })),
    ]);
    assert.deepEqual(res.json.counts, { staged: 32, in_progress: 0, imported: 0, failed: 31, skipped: 0, rejected: 0 });
  });

  test('jobs: the supplier\'s unfinished jobs, newest first, each exactly as GET migration-jobs/<id>/', async () => {
    const tenant = await createTenant(t);
    const create = async () => {
      const res = await call(t.app, 'POST', '/v1/data-import/migration-jobs/', { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
      assert.equal(res.status, 201, res.body);
      return res.json.id as string;
    };
    const [open, running, completed, cancelled] = [await create(), await create(), await create(), await create()];
    await sql`UPDATE migration_jobs SET created_at = created_at - interval '1 minute' WHERE id = ${open}::uuid`.execute(db);
    await sql`UPDATE migration_jobs SET state = 'running', started_at = now() WHERE id = ${running}::uuid`.execute(db);
    await sql`UPDATE migration_jobs SET state = 'completed', finished_at = now() WHERE id = ${completed}::uuid`.execute(db);
    await sql`UPDATE migration_jobs SET state = 'cancelled', finished_at = now() WHERE id = ${cancelled}::uuid`.execute(db);
    const job = async (id: string) => (await call(t.app, 'GET', `/v1/data-import/migration-jobs/${id}/`, { token: tenant.token })).json;
    const res = await stats(tenant);
    assert.deepEqual(res.json.jobs, [await job(running), await job(open)]);
    assert.deepEqual(res.json.jobs.map((j: { state: string }) => j.state), ['running', 'open']);
  });

  test('tenancy: another organisation\'s supplier is 404 like an unknown one; no token is 401', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    await stage(t, other);
    const foreign = await stats(tenant, other.supplier);
    const unknown = await stats(tenant, 'NO-SUCH-SUPPLIER');
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.json, { detail: `No import supplier with code "${other.supplier}".`, code: 'not_found' });
    assert.deepEqual(unknown.json, { detail: 'No import supplier with code "NO-SUCH-SUPPLIER".', code: 'not_found' });
    const anonymous = await call(t.app, 'GET', `/v1/data-import/stats/${other.supplier}/`);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.json.code, 'not_authenticated');
  });
});

describe('the failures filter of the lists (?state=failed, D14)', () => {
  const list = (tenant: Tenant, kind: string, query: string) =>
    call(t.app, 'GET', `/v1/data-import/${kind}-account-import-processes/${tenant.supplier}/${query}`, { token: tenant.token });

  test('all and pending: only staged accounts whose latest attempt failed, with its error; unfiltered lists unchanged', async () => {
    const tenant = await createTenant(t);
    await stageAndCreate(t, tenant);
    const plain = await stage(t, tenant);
    const mobile = await failingAccount(tenant, ['customers', '0', 'mobile'], '12');
    const team = await stage(t, tenant);
    await processAccount(t, tenant, team.external_account_number, { operations_team_name: 'no-such-team' });
    const skipped = await failingAccount(tenant, ['customers', '0', 'mobile'], '12');
    await skipAccount(db, tenant.supplier, skipped);
    const detail = async (ext: string) => (await db.selectFrom('create_attempts').select('error_detail')
      .where('external_account_number', '=', ext).orderBy('id', 'desc').executeTakeFirstOrThrow()).error_detail;
    const expected = [
      { external_account_number: mobile, service_account_number: null, account_created_at: null,
        last_error: { code: 'account_failed_validation', attr: 'customers.0.mobile', detail: await detail(mobile) } },
      { external_account_number: team.external_account_number, service_account_number: null, account_created_at: null,
        last_error: { code: 'operations_team_not_found', attr: 'operations_team_name', detail: 'No operations team named "no-such-team".' } },
    ];
    for (const kind of ['all', 'pending']) {
      assert.deepEqual((await list(tenant, kind, '?state=failed')).json, expected, kind);
      const first = await list(tenant, kind, '?state=failed&page_size=1');
      assert.deepEqual(first.json, [expected[0]]);
      const next = /<([^>]+)>; rel="next"/.exec(String(first.headers.link))![1]!;
      assert.match(next, /[?&]state=failed&/);
      const second = await call(t.app, 'GET', next, { token: tenant.token });
      assert.deepEqual(second.json, [expected[1]]);
      assert.equal(second.headers.link, undefined);
    }
    const pending = (await list(tenant, 'pending', '')).json as Array<Record<string, unknown>>;
    assert.ok(pending.every((r) => !('last_error' in r)));
    for (const ext of [plain.external_account_number, mobile, team.external_account_number]) {
      assert.ok(pending.some((r) => r.external_account_number === ext), ext);
    }
  });

  test('an unknown state is 400 invalid at state; the imported list takes no state', async () => {
    const tenant = await createTenant(t);
    for (const [kind, query] of [['all', '?state=broken'], ['pending', '?state='], ['imported', '?state=failed']] as const) {
      const res = await list(tenant, kind, query);
      assert.equal(res.status, 400, `${kind}${query}`);
      assert.equal(res.json.code, 'invalid');
      assert.deepEqual(res.json.errors.map((e: { code: string; attr: string }) => e.attr), ['state']);
    }
  });
});

describe('domain metrics on /metrics (D14)', () => {
  const scrape = async () => (await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).body;
  const value = (body: string, series: string) => {
    const line = body.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  test('supplier codes only to the scrape credential (METRICS_TOKEN): none without it, 401 for a wrong one', async () => {
    const tenant = await createTenant(t);
    const scrapeWith = (headers: Record<string, string>, app = t.app) => call(app, 'GET', '/metrics', { headers });
    await call(t.app, 'GET', '/healthz');
    const withToken = await scrapeWith({ authorization: `bearer  ${METRICS_TOKEN}` });
    assert.equal(withToken.status, 200);
    assert.ok(withToken.body.includes(`supplier="${tenant.supplier}"`), 'the scrape credential sees the supplier-labelled series');
    assert.match(withToken.body, /^http_requests_total\{/m, 'beside the open metrics');

    const open = await scrapeWith({});
    assert.equal(open.status, 200);
    assert.ok(!open.body.includes(tenant.supplier), 'no supplier code without the credential');
    assert.doesNotMatch(open.body, /supplier=|^import_|^migration_job_|^webhook_|^payment_vendor_/m, 'no domain series at all');
    assert.match(open.body, /^http_requests_total\{/m, 'the HTTP and process metrics stay open');
    assert.match(open.body, /^process_cpu_user_seconds_total /m);

    const refused = { detail: 'The metrics scrape credential is "Authorization: Bearer <METRICS_TOKEN>".', code: 'authentication_failed' };
    for (const authorization of [`Bearer ${METRICS_TOKEN}x`, `Bearer ${METRICS_TOKEN.slice(0, -1)}`, 'Bearer', `Token ${METRICS_TOKEN}`, METRICS_TOKEN]) {
      const res = await scrapeWith({ authorization });
      assert.deepEqual([res.status, res.json], [401, refused], authorization);
      assert.ok(!res.body.includes(tenant.supplier));
    }

    // Without METRICS_TOKEN configured, nobody gets the domain metrics, whatever they send.
    const unset = await buildApp({ modules: t.modules, config: { ...t.config, metricsToken: undefined } });
    try {
      await call(unset, 'GET', '/healthz');
      const anonymous = await scrapeWith({}, unset);
      assert.equal(anonymous.status, 200);
      assert.ok(!anonymous.body.includes(tenant.supplier));
      assert.doesNotMatch(anonymous.body, /supplier=/);
      assert.match(anonymous.body, /^http_requests_total\{/m);
      const guessed = await scrapeWith({ authorization: `Bearer ${METRICS_TOKEN}` }, unset);
      assert.deepEqual([guessed.status, guessed.json], [401, refused]);
    } finally {
      await unset.close();
    }
  });

  test('the supplier\'s accounts by state and the failures by code follow the store', async () => {
    const tenant = await createTenant(t);
    const supplierId = await supplierIdOf(t, tenant.supplier);
    const code = `metric_code_${unique('c').slice(2)}`.replace(/-/g, '_');
    const series = (state: string) => `import_accounts{supplier="${tenant.supplier}",state="${state}"}`;
    let body = await scrape();
    assert.deepEqual(['staged', 'imported', 'skipped', 'failed'].map((s) => value(body, series(s))), [0, 0, 0, 0]);
    assert.equal(value(body, `import_accounts_failed_by_code{code="${code}"}`), undefined);
    await stageAndCreate(t, tenant);
    await attemptRows(supplierId, [{ ext: 'M-1', attempts: [{ outcome: 'failed', code, attr: 'x' }] }, { ext: 'M-2', attempts: [] }]);
    body = await scrape();
    assert.deepEqual(['staged', 'imported', 'skipped', 'failed'].map((s) => value(body, series(s))), [2, 1, 0, 1]);
    assert.equal(value(body, `import_accounts_failed_by_code{code="${code}"}`), 1);
  });

  test('creates in progress, job records by outcome, vendor latency and webhook deliveries are exposed', async () => {
    const tenant = await createTenant(t);
    const running = await stage(t, tenant);
    const before = value(await scrape(), 'import_creates_in_progress')!;
    const release = await holdCreate(t, tenant.supplier, running.external_account_number);
    let during;
    try {
      during = value(await scrape(), 'import_creates_in_progress');
    } finally {
      await release();
    }
    // Other test files may hold locks on a shared PostgreSQL: ours adds one to whatever they hold.
    assert.ok(during! >= 1 && during! >= before, `in progress ${before} → ${during}`);
    const body = await scrape();
    assert.equal(typeof value(body, 'import_concurrency_slots_in_use'), 'number');
    for (const outcome of ['pending', 'running', 'succeeded', 'skipped', 'failed', 'cancelled']) {
      assert.equal(typeof value(body, `migration_job_records{outcome="${outcome}"}`), 'number', outcome);
    }
    assert.match(body, /# TYPE payment_vendor_request_duration_seconds histogram/);
    assert.match(body, /# TYPE webhook_deliveries_last_hour gauge/);
  });

  test('job records of unfinished jobs by outcome change as records are uploaded', async () => {
    const tenant = await createTenant(t);
    const job = await call(t.app, 'POST', '/v1/data-import/migration-jobs/', { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const before = value(await scrape(), 'migration_job_records{outcome="failed"}')!;
    // Three lines that are not JSON objects: failed at once, at upload.
    const upload = await t.app.inject({
      method: 'POST', url: `/v1/data-import/migration-jobs/${job.json.id}/records/`,
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' }, payload: '1\n2\n3\n',
    });
    assert.equal(upload.statusCode, 200, upload.body);
    const after = value(await scrape(), 'migration_job_records{outcome="failed"}')!;
    assert.ok(after - before >= 3, `failed records ${before} → ${after}`);
  });
});
