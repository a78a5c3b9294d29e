import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import * as admin from '../../src/modules/admin/index.ts';
import { RECORD_QUEUE } from '../../src/modules/migration-jobs/index.ts';
import { PG_ONLY, pgSession, twoLooks, waitUntil } from '../support/imports.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// Job controls over HTTP: pause, resume and the throttle (max_records_per_minute), with this
// process's queue workers running the records. A window of 3 records on the queue per job, so a
// paused job has records waiting on the queue as well as records never sent.
const t = await buildTestApp({
  WORKER_CONCURRENCY: '4', JOB_RETRY_LIMIT: '2', JOB_RETRY_DELAY_SECONDS: '0', JOB_PAUSE_RECHECK_SECONDS: '1', JOB_DISPATCH_WINDOW: '3',
});
const db = t.store.db;
const BASE = '/v1/data-import/migration-jobs/';

async function startedJob(tenant: Tenant, records: number, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, ...extra } });
  assert.equal(created.status, 201, created.body);
  const id = created.json.id as string;
  const lines = Array.from({ length: records }, () => JSON.stringify({ account: accountPayload(tenant.supplier) })).join('\n');
  const up = await t.app.inject({
    method: 'POST', url: `${BASE}${id}/records/`, payload: lines,
    headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
  });
  assert.equal(up.statusCode, 200, up.body);
  assert.equal((await action(tenant, id, 'start')).status, 200);
  return id;
}

const action = (tenant: Tenant, id: string, name: 'start' | 'pause' | 'resume' | 'cancel') => call(t.app, 'POST', `${BASE}${id}/${name}/`, { token: tenant.token });
const patch = (tenant: Tenant, id: string, body: unknown) => call(t.app, 'PATCH', `${BASE}${id}/`, { token: tenant.token, body });
const getJob = async (tenant: Tenant, id: string) => (await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token })).json;

async function ended(tenant: Tenant, id: string, state = 'completed') {
  await waitUntil(async () => (await getJob(tenant, id)).state === state, `job ${id} is ${state}`, 60_000);
  return getJob(tenant, id);
}

describe('POST migration-jobs/<id>/pause/ and resume/', () => {
  test('a paused job starts no new record; resumed, it completes', async () => {
    const tenant = await createTenant(t);
    const id = await startedJob(tenant, 24);
    await waitUntil(async () => (await getJob(tenant, id)).counts.succeeded >= 2, 'records run', 30_000);

    const paused = await action(tenant, id, 'pause');
    assert.equal(paused.status, 200, paused.body);
    assert.deepEqual([paused.json.state, paused.json.paused], ['paused', true]);
    // Records in flight finish; then nothing starts: the counts stay as they are, records stay pending,
    // past several re-checks of the records waiting on the queue (JOB_PAUSE_RECHECK_SECONDS is 1).
    await waitUntil(async () => (await getJob(tenant, id)).counts.running === 0, 'records in flight finished', 30_000);
    const before = await getJob(tenant, id);
    await twoLooks(t, id);
    const after = await getJob(tenant, id);
    assert.equal(after.state, 'paused');
    assert.deepEqual(after.counts, before.counts);
    // Records ran at a rate, and some are left, but none runs while paused: no ETA.
    assert.ok(after.records_per_minute > 0, `a rate: ${after.records_per_minute}`);
    assert.equal(after.eta_seconds, null);
    assert.ok(after.counts.pending > 0, `records wait: ${JSON.stringify(after.counts)}`);
    // Waiting used up no retry: the records waiting on the queue were claimed no time.
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM migration_job_records
      WHERE job_id = ${id}::uuid AND outcome = 'pending' AND attempts > 0`.execute(db);
    assert.equal(rows[0]!.n, 0);
    // Pausing again changes nothing.
    assert.deepEqual([(await action(tenant, id, 'pause')).json.state], ['paused']);

    const resumed = await action(tenant, id, 'resume');
    assert.equal(resumed.status, 200, resumed.body);
    assert.equal(resumed.json.paused, false);
    assert.ok(['running', 'queued'].includes(resumed.json.state), resumed.json.state);
    const done = await ended(tenant, id);
    assert.deepEqual([done.counts.succeeded, done.counts.total, done.paused], [24, 24, false]);
  });

  test('refusals: finished job, job not paused, supplier paused, unknown job', async () => {
    const tenant = await createTenant(t);
    const id = await startedJob(tenant, 1);
    await ended(tenant, id);
    const finished = { detail: `Migration job "${id}" is already completed.`, code: 'migration_job_finished' };
    assert.deepEqual(await action(tenant, id, 'pause').then((r) => [r.status, r.json]), [400, finished]);
    assert.deepEqual(await action(tenant, id, 'resume').then((r) => [r.status, r.json]), [400, finished]);

    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const open = created.json.id as string;
    assert.deepEqual(await action(tenant, open, 'resume').then((r) => [r.status, r.json]),
      [400, { detail: `Migration job "${open}" was not paused.`, code: 'migration_job_not_paused' }]);
    // A job shown paused because its supplier is paused is not resumed by resume/.
    await admin.setSupplier(db, tenant.supplier, { status: 'paused' });
    await t.directory.sync();
    assert.deepEqual(await action(tenant, open, 'resume').then((r) => [r.status, r.json]), [400, {
      detail: `Migration job "${open}" was not paused; its supplier "${tenant.supplier}" is paused, and the job goes on when it is ongoing again.`,
      code: 'migration_job_not_paused',
    }]);
    await admin.setSupplier(db, tenant.supplier, { status: 'ongoing' });
    await t.directory.sync();
    // An open job may be paused: started, it waits.
    assert.deepEqual((await action(tenant, open, 'pause')).json.state, 'open');
    const unknown = '00000000-0000-4000-8000-000000000000';
    assert.deepEqual(await action(tenant, unknown, 'pause').then((r) => [r.status, r.json]),
      [404, { detail: `No migration job "${unknown}".`, code: 'not_found' }]);
  });

  test('a cancelled paused job is no longer paused', async () => {
    const tenant = await createTenant(t);
    const id = await startedJob(tenant, 6);
    await action(tenant, id, 'pause');
    await action(tenant, id, 'cancel');
    const done = await ended(tenant, id, 'cancelled');
    assert.equal(done.paused, false);
  });

  test('records a stopped worker left running on a paused job wait as pending; after a cancel they are cancelled and the job ends', async () => {
    const tenant = await createTenant(t);
    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const id = created.json.id as string;
    const up = await t.app.inject({
      method: 'POST', url: `${BASE}${id}/records/`, payload: Array.from({ length: 4 }, () => JSON.stringify({ account: accountPayload(tenant.supplier) })).join('\n'),
      headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/x-ndjson' },
    });
    assert.equal(up.statusCode, 200, up.body);
    assert.equal((await action(tenant, id, 'pause')).status, 200);
    assert.equal((await action(tenant, id, 'start')).status, 200);
    // A worker took lines 1 and 2 and was killed: they stay running until their queue job expires and
    // comes back, here sent as the queue sends it again, while the job is paused.
    const strand = async () => {
      await sql`UPDATE migration_job_records SET outcome = 'running', enqueued = true, attempts = attempts + 1
        WHERE job_id = ${id}::uuid AND line IN (1, 2)`.execute(db);
      await sql`UPDATE migration_jobs SET state = 'running' WHERE id = ${id}::uuid`.execute(db);
      await t.queue.send(RECORD_QUEUE, { job_id: id, lines: [1, 2], org: 0 });
    };
    await strand();
    await waitUntil(async () => (await getJob(tenant, id)).counts.running === 0, 'the stranded records wait as pending', 30_000);
    const waiting = await getJob(tenant, id);
    assert.deepEqual([waiting.state, waiting.counts.pending], ['paused', 4]);

    await strand();
    const cancelled = await action(tenant, id, 'cancel');
    assert.equal(cancelled.status, 200, cancelled.body);
    const done = await ended(tenant, id, 'cancelled');
    assert.deepEqual([done.counts.cancelled, done.counts.running, done.counts.total], [4, 0, 4]);
    // Records cancelled are no throughput.
    assert.equal(done.records_per_minute, 0);
  });

  test('a control does not wait on the key-share lock every writer of the job\'s records takes (it deadlocked with the workers)', { skip: PG_ONLY }, async () => {
    // Writing a job's records (their counter rows) checks the job row as a foreign key: a KEY SHARE
    // lock on it, held until the writer commits. A control that locked the row FOR UPDATE waited on
    // it, while the writer could wait on the control's records: a deadlock, answered 503 (a probe's
    // pause, resume, cancel and retry from two instances against a running job).
    const tenant = await createTenant(t);
    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const id = created.json.id as string;
    const writer = await pgSession(t.config.databaseUrl);
    try {
      await writer.query('BEGIN');
      await writer.query('SELECT 1 FROM migration_jobs WHERE id = $1 FOR KEY SHARE', [id]);
      for (const name of ['pause', 'resume', 'cancel'] as const) {
        const waited = new Promise<'waited'>((resolve) => { setTimeout(() => resolve('waited'), 3_000).unref(); });
        const answer = await Promise.race([action(tenant, id, name), waited]);
        assert.notEqual(answer, 'waited', `${name} waited on the writer's lock`);
        assert.equal((answer as { status: number }).status, 200, name);
      }
    } finally {
      await writer.query('ROLLBACK');
      await writer.end();
    }
  });

  test('another organisation\'s job is 404 to pause, resume and PATCH', async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const id = created.json.id as string;
    const notFound = { detail: `No migration job "${id}".`, code: 'not_found' };
    for (const name of ['pause', 'resume'] as const) {
      assert.deepEqual(await action(other, id, name).then((r) => [r.status, r.json]), [404, notFound]);
    }
    assert.deepEqual(await patch(other, id, { max_records_per_minute: 10 }).then((r) => [r.status, r.json]), [404, notFound]);
    assert.equal((await getJob(tenant, id)).paused, false);
    assert.equal((await getJob(tenant, id)).max_records_per_minute, null);
  });
});

describe('records_per_minute of a job that has ended', () => {
  test('is its rate at its end, still shown once its last five minutes have passed', async () => {
    const tenant = await createTenant(t);
    const id = await startedJob(tenant, 6);
    const done = await ended(tenant, id);
    assert.ok(done.records_per_minute > 0, `a rate at the end: ${done.records_per_minute}`);
    assert.equal(done.eta_seconds, null);
    // Ten minutes on: nothing finished in the last five, and the job shows the rate it ended with.
    await sql`UPDATE migration_jobs SET started_at = started_at - interval '10 minutes', finished_at = finished_at - interval '10 minutes'
      WHERE id = ${id}::uuid`.execute(db);
    await sql`UPDATE migration_job_records SET finished_at = finished_at - interval '10 minutes' WHERE job_id = ${id}::uuid`.execute(db);
    assert.equal((await getJob(tenant, id)).records_per_minute, done.records_per_minute);
  });
});

describe('the answer of an action', () => {
  test('is the job as its own request left it: pauses and resumes sent at once each answer their own write', async () => {
    const tenant = await createTenant(t);
    // Scheduled far ahead: nothing of it runs, only the requests change it.
    const id = await startedJob(tenant, 1, { not_before: '2099-01-01T00:00:00Z' });
    for (let round = 0; round < 3; round++) {
      const names = Array.from({ length: 12 }, (_, i): 'pause' | 'resume' => (i % 2 === 0 ? 'pause' : 'resume'));
      const answers = await Promise.all(names.map((name) => action(tenant, id, name)));
      answers.forEach((res, i) => {
        if (res.status === 400) {
          assert.equal(res.json.code, 'migration_job_not_paused', res.body);
          return;
        }
        assert.equal(res.status, 200, res.body);
        assert.equal(res.json.paused, names[i] === 'pause', `${names[i]} answered ${JSON.stringify([res.json.state, res.json.paused])}`);
      });
    }
  });
});

describe('max_records_per_minute', () => {
  test('set at creation, changed and lifted by PATCH; shown on the job', async () => {
    const tenant = await createTenant(t);
    const created = await call(t.app, 'POST', BASE, {
      token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, max_records_per_minute: 60 },
    });
    assert.equal(created.json.max_records_per_minute, 60);
    const id = created.json.id as string;
    assert.deepEqual(await patch(tenant, id, { max_records_per_minute: 300 }).then((r) => [r.status, r.json.max_records_per_minute]), [200, 300]);
    assert.deepEqual(await patch(tenant, id, { max_records_per_minute: null }).then((r) => [r.status, r.json.max_records_per_minute]), [200, null]);
    assert.equal((await getJob(tenant, id)).max_records_per_minute, null);
  });

  test('400s: not a positive whole number, missing, another field', async () => {
    const tenant = await createTenant(t);
    const created = await call(t.app, 'POST', BASE, { token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team } });
    const id = created.json.id as string;
    const invalid = (code: string, detail: string, attr = 'max_records_per_minute') =>
      ({ detail: 'The request failed validation.', code: 'invalid', errors: [{ detail, code, attr }] });
    const cases: Array<[unknown, object]> = [
      [{ max_records_per_minute: 0 }, invalid('min_value', 'Ensure this value is greater than or equal to 1.')],
      [{ max_records_per_minute: 1_000_001 }, invalid('max_value', 'Ensure this value is less than or equal to 1000000.')],
      [{}, invalid('required', 'This field is required.')],
      [{ max_records_per_minute: 1.5 }, invalid('invalid', 'Expected an integer or null.')],
      [{ max_records_per_minute: '10' }, invalid('invalid', 'Expected an integer or null.')],
      [{ max_records_per_minute: 10, paused: true }, invalid('unknown_field', 'This field is not part of the documented payload and must not be sent.', 'paused')],
    ];
    for (const [body, expected] of cases) {
      const res = await patch(tenant, id, body);
      assert.deepEqual([res.status, res.json], [400, expected], JSON.stringify(body));
    }
    const res = await call(t.app, 'POST', BASE, {
      token: tenant.token, body: { import_supplier: tenant.supplier, operations_team_name: tenant.team, max_records_per_minute: -5 },
    });
    assert.deepEqual([res.status, res.json], [400, invalid('min_value', 'Ensure this value is greater than or equal to 1.')]);
    assert.equal((await getJob(tenant, id)).max_records_per_minute, null);
  });

  test('a throttled job never runs faster than its limit, nor far below it', async () => {
    const tenant = await createTenant(t);
    const limit = 240;
    const records = 61; // 60 gaps of a quarter of a second: about 15 s
    const id = await startedJob(tenant, records, { max_records_per_minute: limit });
    await ended(tenant, id);
    const { rows } = await sql<{ first: Date; last: Date; n: number }>`SELECT min(finished_at) AS first, max(finished_at) AS last, count(*)::int AS n
      FROM migration_job_records WHERE job_id = ${id}::uuid AND outcome = 'succeeded'`.execute(db);
    const { first, last, n } = rows[0]!;
    assert.equal(n, records);
    const perMinute = ((n - 1) / (last.getTime() - first.getTime())) * 60_000;
    // The limit is a ceiling: at most 10% over it (the measure's own slack). Below it, the records'
    // own time and the machine's load count too: on a busy two-core machine (the suite runs two files
    // at once) a quarter of a second a record was missed by up to 35% (156.5 a minute, beside a CI
    // run). A pacing that waited for twice the gap, or longer, still fails the floor of half.
    const measured = `measured ${perMinute.toFixed(1)} records a minute against a limit of ${limit}`;
    assert.ok(perMinute <= limit * 1.1, measured);
    assert.ok(perMinute >= limit * 0.5, measured);
  });
});
