import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SLOT_LOCK_SPACE } from '../../src/modules/account-imports/index.ts';
import { isolatedDatabaseUrl, PG_ONLY, pgSession, PROCESS_URL, processAccount, stage, STAGE_URL, waitUntil } from '../support/imports.ts';
import { request, startServer } from '../support/server-process.ts';
import { buildTestApp, call, createTenant, type TestApp } from '../support/test-app.ts';
import { sql } from 'kysely';
import { JOBS, runJobToEnd, startJob } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import type { AccountData } from '../../src/modules/account-data/index.ts';

// Creates racing each other (D6) and the concurrency limit of spec 8, counted in PostgreSQL.
const t = await buildTestApp();
const db = t.store.db;

// Two instances with PROCESS_CONCURRENCY_LIMIT=2 over one database of their own (advisory locks are
// per database, so creates of other test files cannot take these slots).
const url = PG_ONLY ? '' : await isolatedDatabaseUrl();
const apps = PG_ONLY ? [] : [
  await buildTestApp({ DATABASE_URL: url, PROCESS_CONCURRENCY_LIMIT: '2' }),
  await buildTestApp({ DATABASE_URL: url, PROCESS_CONCURRENCY_LIMIT: '2' }),
];
// A third instance over the same database, with a migration worker (one chunk per look of 6 records):
// a job's chunk counts against the same limit.
const chunker = PG_ONLY ? null : await buildTestApp({ DATABASE_URL: url, PROCESS_CONCURRENCY_LIMIT: '2', WORKER_CONCURRENCY: '1', JOB_RETRY_DELAY_SECONDS: '1' });
// An instance with one slot and a short retry schedule, over a database of its own: a record that
// never gets the slot runs out of its tries within the test.
const scarceUrl = PG_ONLY ? '' : await isolatedDatabaseUrl();
const scarce = PG_ONLY ? null : await buildTestApp({
  DATABASE_URL: scarceUrl, PROCESS_CONCURRENCY_LIMIT: '1', WORKER_CONCURRENCY: '1', JOB_RETRY_LIMIT: '2', JOB_RETRY_DELAY_SECONDS: '0',
});

describe('concurrency (D6, spec 8)', () => {
  test('10 creates of one account at once make exactly one account; the others get a clear 400', async () => {
    const tenant = await createTenant(t);
    const payload = await stage(t, tenant);
    const results = await Promise.all(Array.from({ length: 10 }, () => processAccount(t, tenant, payload.external_account_number)));
    const created = results.filter((r) => r.status === 201);
    assert.equal(created.length, 1);
    for (const loser of results.filter((r) => r.status !== 201)) {
      assert.equal(loser.status, 400);
      assert.ok(['account_import_in_progress', 'account_already_imported'].includes(loser.json.code), loser.body);
      assert.equal(loser.json.errors[0].attr, 'external_account_number');
    }
    const accounts = await db.selectFrom('accounts').select('number')
      .where('external_account_number', '=', payload.external_account_number).execute();
    assert.deepEqual(accounts, [{ number: created[0]!.json.service_account_number }]);
  });

  test('a job record\'s create is made from the data it staged: another request\'s stage in between is account_staged_data_changed, nothing created', async () => {
    // A migration job's record stages, then creates, as two steps (record-pipeline.ts); a create makes
    // the account from the data staged when it runs. Here the record's two steps, with a stage by
    // another request (the REST endpoint, another instance) between them.
    const tenant = await createTenant(t);
    const caller = await t.tokens.authenticate(tenant.token);
    const ours = accountPayload(tenant.supplier);
    const ext = ours.external_account_number;
    const { stored } = await t.modules.imports.stage(caller, ours);
    const theirs = { ...ours, billing_address: { ...ours.billing_address, locality: 'Bath' } };
    assert.equal((await call(t.app, 'POST', STAGE_URL, { token: tenant.token, body: theirs })).status, 200);
    const body = { import_supplier_code: tenant.supplier, external_account_number: ext, operations_team_name: tenant.team };
    await assert.rejects(t.modules.imports.create(caller, body, { stagedByCaller: stored, onCreated: async () => {} }), (error: { code?: string; detail?: string }) => {
      assert.equal(error.code, 'account_staged_data_changed');
      assert.match(error.detail!, new RegExp(`Account "${ext}" was staged again, with other data, by another request`));
      return true;
    });
    assert.deepEqual(await db.selectFrom('accounts').select('number').where('external_account_number', '=', ext).execute(), []);
    // Its own data staged again (the record run again), the same create makes the account.
    const again = await t.modules.imports.stage(caller, ours);
    const made = await t.modules.imports.create(caller, body, { stagedByCaller: again.stored, onCreated: async () => {} });
    assert.match(made.service_account_number, /^A-/);
    // A GB postcode the record sent in another form is stored normalised, and the stage says so: still the record's own data.
    const other = accountPayload(tenant.supplier);
    const spaced = { ...other, billing_address: { ...other.billing_address, postal_code: 'bs15ty' } };
    const staged = await t.modules.imports.stage(caller, spaced);
    assert.equal(staged.stored.billing_address.postal_code, 'BS1 5TY');
    const normalised = await t.modules.imports.create(caller, { ...body, external_account_number: other.external_account_number }, { stagedByCaller: staged.stored });
    assert.match(normalised.service_account_number, /^A-/);
  });
});

describe('the concurrency limit across instances (PostgreSQL)', { skip: PG_ONLY }, () => {
  const slotsHeld = async () => {
    const session = await pgSession(url);
    try {
      const { rows } = await session.query(`SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND classid = $1::int8::oid AND objsubid = 2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, [SLOT_LOCK_SPACE]);
      return rows[0].n as number;
    } finally { await session.end(); }
  };

  /**
   * Writes, in `holder`'s open transaction, a supply point with the electricity identifier of
   * `payload` onto the account of `created` (an account already made): a create of `payload` then
   * waits at its insert of its supply points (the identifier's unique index waits for this
   * transaction) holding its account lock and its slot, whether it runs in a transaction of its own or
   * as one statement (create-account.service.ts), until `holder` rolls back. (A lock on the accounts
   * table would stop the one statement before it takes anything: a statement locks its tables
   * first. Holding the import row would stop either before its slot: they lock that row FOR UPDATE.)
   */
  const holdIdentifierOf = async (holder: Awaited<ReturnType<typeof pgSession>>, payload: AccountData, created: AccountData) => {
    const identifier = payload.supply_addresses.flatMap((address) => address.supply_points)
      .flatMap((point) => (point.supply_type === 'ELECTRICITY' ? [point.identifier] : []))[0];
    const { rowCount } = await holder.query(`INSERT INTO supply_points (account_id, supply_address_id, position, supply_type, supply_start_date, identifier)
      SELECT sa.account_id, sa.id, 1000, 'ELECTRICITY', '2020-01-01', $1 FROM supply_addresses sa JOIN accounts ac ON ac.id = sa.account_id
      WHERE ac.external_account_number = $2 LIMIT 1`, [identifier, created.external_account_number]);
    assert.equal(rowCount, 1);
  };

  test('past the limit the excess gets 429 with Retry-After, whichever instance it reaches', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const [p0, p1, p2, p3] = [await stage(a, tenant), await stage(a, tenant), await stage(a, tenant), await stage(a, tenant)];
    assert.equal((await processAccount(a, tenant, p0.external_account_number)).status, 201);
    const holder = await pgSession(url);
    try {
      // Another "instance" holds slot 1, and p1's identifier, so that instance a's create of p1
      // waits at its insert while holding slot 2.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 1)', [SLOT_LOCK_SPACE]);
      await holdIdentifierOf(holder, p1, p0);
      const blocked = processAccount(a, tenant, p1.external_account_number);
      await waitUntil(async () => (await slotsHeld()) === 2, 'the create of p1 holds the second slot');

      for (const [app, payload] of [[b, p2], [a, p3]] as const) {
        const res = await processAccount(app, tenant, payload.external_account_number);
        assert.equal(res.status, 429);
        assert.deepEqual(res.json, { detail: 'More than 2 accounts are being created at once; retry shortly.', code: 'concurrency_limit_exceeded' });
        assert.equal(res.headers['retry-after'], '2');
      }
      await holder.query('ROLLBACK');
      assert.equal((await blocked).status, 201);
      assert.equal((await processAccount(b, tenant, p2.external_account_number)).status, 201);
    } finally {
      await holder.end();
    }
  });

  test('a create refused because another instance is creating the account is answered at once, not when that create ends', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const [p0, p1] = [await stage(a, tenant), await stage(a, tenant)];
    assert.equal((await processAccount(a, tenant, p0.external_account_number)).status, 201);
    const holder = await pgSession(url);
    try {
      // Instance a's create holds the account's lock and its import row, and waits at its insert.
      await holder.query('BEGIN');
      await holdIdentifierOf(holder, p1, p0);
      const running = processAccount(a, tenant, p1.external_account_number);
      await waitUntil(async () => (await slotsHeld()) === 1, 'the create on a holds its slot');
      const started = Date.now();
      const refused = await Promise.race([
        processAccount(b, tenant, p1.external_account_number),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
      ]);
      assert.ok(refused, 'b answered while a\'s create was still running');
      assert.ok(Date.now() - started < 2_000, `answered in ${Date.now() - started} ms`);
      assert.deepEqual([refused.status, refused.json.code], [400, 'account_import_in_progress']);
      await holder.query('ROLLBACK');
      assert.equal((await running).status, 201);
      // Both attempts are recorded; the account's latest attempt is its create.
      const attempts = await a.store.db.selectFrom('create_attempts').select(['outcome', 'error_code'])
        .where('external_account_number', '=', p1.external_account_number).orderBy('id').execute();
      assert.deepEqual(attempts, [{ outcome: 'failed', error_code: 'account_import_in_progress' }, { outcome: 'created', error_code: null }]);
      const row = await a.store.db.selectFrom('account_imports').select(['last_attempt_outcome', 'last_error_code'])
        .where('external_account_number', '=', p1.external_account_number).executeTakeFirstOrThrow();
      assert.deepEqual(row, { last_attempt_outcome: 'created', last_error_code: null });
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
  });

  test('a burst over two instances never runs more than the limit at once', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const payloads = await Promise.all(Array.from({ length: 12 }, () => stage(a, tenant)));
    let max = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) max = Math.max(max, await slotsHeld());
    })();
    const results = await Promise.all(payloads.map((p, i) => processAccount(i % 2 ? a : b, tenant, p.external_account_number)));
    sampling = false;
    await sampler;
    assert.ok(max <= 2, `at most 2 slots held at once, saw ${max}`);
    assert.ok(results.some((r) => r.status === 201));
    for (const r of results) {
      assert.ok(r.status === 201 || (r.status === 429 && r.headers['retry-after'] === '2'), `${r.status} ${r.body}`);
    }
  });

  test('the slot is taken by the read that decides, and the checks keep their order: an unknown team is named before a full limit, and a failed create gives its slot back', async () => {
    const [a] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const p1 = await stage(a, tenant);
    const holder = await pgSession(url);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 1)', [SLOT_LOCK_SPACE]);
      // One slot free: the create with no such team takes it with its read, fails, and rolls it back.
      const unknown = await processAccount(a, tenant, p1.external_account_number, { operations_team_name: 'No such team' });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.json.code, 'operations_team_not_found');
      assert.equal(await slotsHeld(), 1, 'only the holder\'s slot is held');
      // Every slot held elsewhere: the team is still what the answer names, as before any slot.
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 2)', [SLOT_LOCK_SPACE]);
      const stillUnknown = await processAccount(a, tenant, p1.external_account_number, { operations_team_name: 'No such team' });
      assert.equal(stillUnknown.json.code, 'operations_team_not_found');
      assert.equal((await processAccount(a, tenant, p1.external_account_number)).status, 429);
      await holder.query('COMMIT');
      assert.equal((await processAccount(a, tenant, p1.external_account_number)).status, 201);
    } finally {
      await holder.end();
    }
  });

  test('slots held by a session that is terminated are freed', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const [p1, p2] = [await stage(a, tenant), await stage(a, tenant)];
    const killer = await pgSession(url);
    const holder = await pgSession(url);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 1), pg_advisory_xact_lock($1::int4, 2)', [SLOT_LOCK_SPACE]);
      assert.equal((await processAccount(a, tenant, p1.external_account_number)).status, 429);
      const { rows: [{ pid }] } = await holder.query('SELECT pg_backend_pid() AS pid');
      await killer.query('SELECT pg_terminate_backend($1)', [pid]);
      await waitUntil(async () => (await slotsHeld()) === 0, 'the killed session\'s slots are free');
      assert.equal((await processAccount(b, tenant, p2.external_account_number)).status, 201);
      assert.equal((await processAccount(a, tenant, p1.external_account_number)).status, 201);
    } finally {
      await holder.end().catch(() => {});
      await killer.end();
    }
  });

  test('an instance killed mid-create frees its slot and leaves no half-created account', async () => {
    const [a, b] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const p1 = await stage(a, tenant);
    // A supplier with welcome emails: its create runs in a transaction, a statement at a time (a create
    // with nothing more to write runs as one statement: the next test kills that one).
    await a.store.db.updateTable('import_suppliers').set({ customer_emails: true }).where('code', '=', tenant.supplier).execute();
    const server = await startServer({ DATABASE_URL: url, PROCESS_CONCURRENCY_LIMIT: '2', OUTBOX_INTERVAL_MS: '0' });
    const rowLock = await pgSession(url);
    try {
      // The create on the real server waits at its insert of the account, holding a slot, when it is killed.
      await rowLock.query('BEGIN');
      await rowLock.query('LOCK TABLE accounts IN SHARE MODE');
      const doomed = request(server.url, 'POST', PROCESS_URL, {
        token: tenant.token, timeoutMs: 15_000,
        body: { external_account_number: p1.external_account_number, import_supplier_code: tenant.supplier, operations_team_name: tenant.team },
      });
      await waitUntil(async () => (await slotsHeld()) === 1, 'the server\'s create holds a slot');
      await server.kill();
      assert.ok((await doomed).status <= 0, 'the killed server never answered');
      // Its session ends as soon as PostgreSQL next talks to the dead client: here, once the table is free.
      await rowLock.query('ROLLBACK');
      await waitUntil(async () => (await slotsHeld()) === 0, 'the killed instance\'s slot is free');
      const account = await a.store.db.selectFrom('accounts').select('id').where('external_account_number', '=', p1.external_account_number).execute();
      assert.equal(account.length, 0, 'no half-created account');
      assert.equal((await processAccount(b, tenant, p1.external_account_number)).status, 201);
    } finally {
      await rowLock.end();
      await server.kill();
    }
  });

  test('an instance killed during a create\'s one-statement write leaves the account whole or absent, and its slot free', async (ctx) => {
    const [a, b] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const [p0, p1] = [await stage(a, tenant), await stage(a, tenant)];
    const server = await startServer({ DATABASE_URL: url, PROCESS_CONCURRENCY_LIMIT: '2', OUTBOX_INTERVAL_MS: '0' });
    const holder = await pgSession(url);
    const create = (ext: string) => request(server.url, 'POST', PROCESS_URL, {
      token: tenant.token, timeoutMs: 15_000,
      body: { external_account_number: ext, import_supplier_code: tenant.supplier, operations_team_name: tenant.team },
    });
    try {
      // A create with nothing more to write (no welcome emails, not a dry run) is written by one
      // statement without a transaction of its own.
      assert.equal((await create(p0.external_account_number)).status, 201);
      await holder.query('BEGIN');
      await holdIdentifierOf(holder, p1, p0);
      const doomed = create(p1.external_account_number);
      await waitUntil(async () => (await slotsHeld()) === 1, 'the server\'s create holds a slot');
      const { rows: [waiting] } = await holder.query(`SELECT query FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
      assert.match(waiting.query, /gate AS MATERIALIZED/, 'the create waits inside its one statement');
      await server.kill();
      assert.ok((await doomed).status <= 0, 'the killed server never answered');
      await holder.query('ROLLBACK');
      await waitUntil(async () => (await slotsHeld()) === 0, 'the killed instance\'s slot is free');

      // The statement had all it needed from the dead client: it runs to its end, whole, or not at all.
      const db = a.store.db;
      const accounts = await db.selectFrom('accounts').select(['id', 'number']).where('external_account_number', '=', p1.external_account_number).execute();
      const ofAccount = async () => ({
        points: (await db.selectFrom('supply_points').select('id').where('account_id', '=', accounts[0]!.id).execute()).length,
        attempts: (await db.selectFrom('create_attempts').select('outcome').where('external_account_number', '=', p1.external_account_number).orderBy('id').execute()).map((r) => r.outcome),
        completed: (await db.selectFrom('events').select('id').where('external_account_number', '=', p1.external_account_number)
          .where('type', '=', 'import_process.completed').execute()).length,
      });
      const again = await processAccount(b, tenant, p1.external_account_number);
      ctx.diagnostic(accounts.length === 0 ? 'the statement did not commit' : 'the statement committed after its client died');
      if (accounts.length === 0) {
        assert.equal(again.status, 201, again.body);
      } else {
        const staged = p1.supply_addresses.reduce((n, address) => n + address.supply_points.length, 0);
        assert.deepEqual(await ofAccount(), { points: staged, attempts: ['created', 'failed'], completed: 1 });
        assert.deepEqual([again.status, again.json.code], [400, 'account_already_imported']);
      }
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
      await server.kill();
    }
  });

  test('data staged again between a create\'s first read and its write is the data the account is built from', async () => {
    // The create first reads the staged data without a lock, then writes the account in one
    // statement that checks, under the row's lock, that the data is still the version it read. Here
    // a re-stage holds the row between the two: the create's write waits for it, finds a newer
    // version, writes nothing, and the create starts again in a transaction from the new data.
    const [a] = apps as [TestApp, TestApp];
    const tenant = await createTenant(a);
    const p1 = await stage(a, tenant);
    const restaged = 'B9 9AA';
    assert.notEqual(p1.billing_address.postal_code, restaged);
    const restager = await pgSession(url);
    const watcher = await pgSession(url);
    try {
      await restager.query('BEGIN');
      const { rowCount } = await restager.query(`UPDATE account_imports SET data = jsonb_set(data, '{billing_address,postal_code}', to_jsonb($1::text))
        WHERE external_account_number = $2`, [restaged, p1.external_account_number]);
      assert.equal(rowCount, 1);
      const creating = processAccount(a, tenant, p1.external_account_number);
      await waitUntil(async () => {
        const { rows } = await watcher.query(`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE OF ai%'`);
        return rows[0].n === 1;
      }, 'the create\'s write waits for the re-staged row');
      await restager.query('COMMIT');
      const created = await creating;
      assert.equal(created.status, 201, created.body);
      const account = await a.store.db.selectFrom('accounts').select('billing_postal_code')
        .where('number', '=', created.json.service_account_number).executeTakeFirstOrThrow();
      assert.equal(account.billing_postal_code, restaged);
      const attempts = await a.store.db.selectFrom('create_attempts').select('outcome')
        .where('external_account_number', '=', p1.external_account_number).execute();
      assert.deepEqual(attempts, [{ outcome: 'created' }], 'one attempt, recorded once');
    } finally {
      await restager.query('ROLLBACK').catch(() => {});
      await restager.end();
      await watcher.end();
    }
  });

  test('a job\'s chunk of new accounts takes one slot, not one per account; with none free it goes back to one record at a time', async () => {
    const t3 = chunker!;
    const tenant = await createTenant(t3);
    const records = () => Array.from({ length: 6 }, () => ({ account: accountPayload(tenant.supplier) }));
    /** How many distinct starts the create attempts of these accounts have (one: written as one set). */
    const attemptStarts = async (batch: Array<{ account: { external_account_number: string } }>) => {
      const { n } = await t3.store.db.selectFrom('create_attempts').select(sql<number>`count(DISTINCT started_at)::int`.as('n'))
        .where('external_account_number', 'in', batch.map((r) => r.account.external_account_number)).executeTakeFirstOrThrow();
      return n;
    };
    const holder = await pgSession(url);
    try {
      // One of the two slots is held elsewhere: the chunk's six accounts are still written as one set.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 1)', [SLOT_LOCK_SPACE]);
      const batch = records();
      const one = await runJobToEnd(t3, tenant, batch);
      assert.deepEqual(one.lines.map((l) => [l.outcome, l.created]), Array.from({ length: 6 }, () => ['succeeded', true]));
      assert.equal(await attemptStarts(batch), 1, 'one set: the six attempts share their start');

      // Both slots held: the chunk is refused its slot and rolled back; its records wait, one at a
      // time, as a create refused by the limit does, and all succeed once a slot is free.
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 2)', [SLOT_LOCK_SPACE]);
      const refused = records();
      const id = await startJob(t3, tenant, refused);
      const limited = () => t3.store.db.selectFrom('create_attempts').select('external_account_number').distinct()
        .where('error_code', '=', 'concurrency_limit_exceeded').where('external_account_number', 'in', refused.map((r) => r.account.external_account_number)).execute();
      await waitUntil(async () => (await limited()).length === 6, 'each record, on its own, is refused by the limit');
      const waiting = await call(t3.app, 'GET', `${JOBS}${id}/`, { token: tenant.token });
      assert.equal(waiting.json.counts.succeeded, 0, 'nothing written while no slot is free');
      await holder.query('COMMIT');
      await waitUntil(async () => (await call(t3.app, 'GET', `${JOBS}${id}/`, { token: tenant.token })).json.state === 'completed', 'the job completes', 60_000);
      const done = await call(t3.app, 'GET', `${JOBS}${id}/`, { token: tenant.token });
      assert.deepEqual([done.json.counts.succeeded, done.json.counts.failed], [6, 0]);
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
  });

  test('a job record that never gets a creation slot is tried 1 + JOB_RETRY_LIMIT times, then fails with concurrency_limit_exceeded', async () => {
    const t4 = scarce!;
    const tenant = await createTenant(t4);
    const account = accountPayload(tenant.supplier);
    const holder = await pgSession(scarceUrl);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, 1)', [SLOT_LOCK_SPACE]);
      const { id, lines } = await runJobToEnd(t4, tenant, [{ account }]);
      assert.deepEqual(lines.map((l) => [l.outcome, l.step, l.created, l.errors.map((e) => e.code)]),
        [['failed', 'account', null, ['concurrency_limit_exceeded']]]);
      const { rows } = await sql<{ attempts: number }>`SELECT attempts FROM migration_job_records WHERE job_id = ${id}::uuid`.execute(t4.store.db);
      assert.deepEqual(rows, [{ attempts: 3 }]);
      const made = await t4.store.db.selectFrom('accounts').select('id').where('external_account_number', '=', account.external_account_number).execute();
      assert.deepEqual(made, [], 'no account was made');
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
  });
});
