import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import type { AccountData } from '../../src/modules/account-data/index.ts';
import { createImports, supplyPointsOf } from '../../src/modules/account-imports/index.ts';
import { findSupplierByCode, findTeamByName } from '../../src/modules/admin/index.ts';
import { newAccountRow } from '../support/accounts.ts';
import { PG_ONLY, PROCESS_URL, STAGE_URL, pgSession, stageAndCreate, waitUntil } from '../support/imports.ts';
import { runJobToEnd } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';

// The set-based path of a migration job: a queue job holds a chunk of records, and the chunk's new,
// clean records are written together, table by table, in one transaction. What it writes must be
// exactly what the endpoints write one call at a time, and a poisoned record (a rule it breaks, a
// conflict only the database finds, an error nobody expected) must never cost the chunk's other
// records their outcome.
const logged: Array<{ obj: object; msg: string }> = [];
const workerLogger = { info() {}, warn(obj: object, msg: string) { logged.push({ obj, msg }); }, error(obj: object, msg: string) { logged.push({ obj, msg }); } };
// Two workers: a look of 12 records sends two chunks of 6.
const t = await buildTestApp({ WORKER_CONCURRENCY: '2', JOB_RETRY_LIMIT: '1', JOB_RETRY_DELAY_SECONDS: '0' }, { workerLogger });
const db = t.store.db;

const runJob = (tenant: Tenant, lines: object[]) => runJobToEnd(t, tenant, lines);

/** A full record: the account, two statements, four transactions after them, two notes and three of the account's own again. */
function fullRecord(tenant: Tenant, n: number): { account: AccountData; statements: object[]; transactions: object[]; notes: object[] } {
  const account = accountPayload(tenant.supplier);
  const ext = account.external_account_number;
  return {
    account,
    statements: [
      { statement_id: `${ext}-S1`, bill_period_from_date: '2024-01-01', bill_period_to_date: '2024-01-31', issued_date: '2024-02-02', number: `No-${n}-1`, gross_amount: 80.25 },
      { statement_id: `${ext}-S2`, bill_period_from_date: '2024-02-01', bill_period_to_date: '2024-02-29', issued_date: '2024-03-02', number: `No-${n}-2`, gross_amount: 75 },
    ],
    transactions: [
      { transaction_id: `${ext}-T1`, transaction_date: '2024-03-01', amount: 12.34, type: 'CHARGE', reason: 'IMPORTED_CHARGE' },
      { transaction_id: `${ext}-T2`, transaction_date: '2024-03-05', amount: 50, type: 'PAYMENT', reason: 'ACCOUNT_CHARGE_PAYMENT', payment_type: 'DD_REGULAR_COLLECTION', reference: `R-${n}` },
      { transaction_id: `${ext}-T3`, transaction_date: '2024-03-09', amount: 3.5, type: 'CREDIT', reason: 'GENERAL_CREDIT', display_note: 'Sorry' },
      { transaction_id: `${ext}-T4`, transaction_date: '2024-03-12', amount: 9.99, type: 'SUPPLY_CHARGE', product_code: 'ELEC-STD' },
    ],
    // With the account's own notes again: the first repeats the stored one; the body-less one (its
    // paths) repeats it too; the second, sent at another time, is a note of its own.
    notes: [{ body: `First note of ${n}`, is_pinned: true }, { body: `Second note of ${n}`, created_at: '2024-03-15T10:00:00Z' },
      account.notes![0]!, account.notes![2]!, { body: account.notes![0]!.body, created_at: '2024-03-15T10:00:00Z' }],
  };
}

/** Everything stored under the tenant's accounts, by external account number, less ids, numbers and times. */
async function storedBook(supplier: string): Promise<Record<string, unknown>> {
  const { rows } = await sql<{ ext: string; book: unknown }>`
    SELECT a.external_account_number AS ext, jsonb_build_object(
      'account', (SELECT to_jsonb(x) - '{id,number,created_at,supplier_id,account_import_id,operations_team_id}'::text[] FROM accounts x WHERE x.id = a.id),
      'customers', (SELECT jsonb_agg(to_jsonb(c) - '{id,account_id}'::text[] ORDER BY c.position) FROM customers c WHERE c.account_id = a.id),
      'addresses', (SELECT jsonb_agg(to_jsonb(s) - '{id,account_id}'::text[] ORDER BY s.position) FROM supply_addresses s WHERE s.account_id = a.id),
      'points', (SELECT jsonb_agg(to_jsonb(p) - '{id,account_id,supply_address_id}'::text[] ORDER BY p.supply_address_id, p.position) FROM supply_points p WHERE p.account_id = a.id),
      'meters', (SELECT jsonb_agg(to_jsonb(m) - '{id,supply_point_id}'::text[] ORDER BY m.supply_point_id, m.position)
        FROM meters m JOIN supply_points p ON p.id = m.supply_point_id WHERE p.account_id = a.id),
      'statements', (SELECT jsonb_agg(to_jsonb(s) - '{id,account_id,statement_id,created_at,inserted_at}'::text[] ORDER BY s.bill_period_from_date) FROM statements s WHERE s.account_id = a.id),
      'transactions', (SELECT jsonb_agg(to_jsonb(x) - '{id,account_id,transaction_id,created_at,reference}'::text[] ORDER BY x.transaction_date) FROM transactions x WHERE x.account_id = a.id),
      'notes', (SELECT jsonb_agg(jsonb_build_object('body', n.body, 'pinned', n.is_pinned, 'paths', n.document_paths,
        'sent_time', n.created_at = '2024-03-15T10:00:00Z') ORDER BY n.body) FROM notes n WHERE n.account_id = a.id),
      'staged', (SELECT to_jsonb(ai) - '{id,supplier_id,account_id,staged_at,updated_at,external_account_number,last_attempt_id}'::text[] FROM account_imports ai WHERE ai.id = a.account_import_id),
      'attempts', (SELECT jsonb_agg(jsonb_build_object('outcome', c.outcome, 'dry_run', c.dry_run, 'error', c.error_code)) FROM create_attempts c
        WHERE c.supplier_id = a.supplier_id AND c.external_account_number = a.external_account_number),
      'events', (SELECT jsonb_agg(jsonb_build_object('type', e.type, 'data', e.data - '{service_account_number,account_created_at}'::text[]) ORDER BY e.id)
        FROM events e WHERE e.supplier_id = a.supplier_id AND e.external_account_number = a.external_account_number)
    ) AS book
    FROM accounts a JOIN import_suppliers su ON su.id = a.supplier_id WHERE su.code = ${supplier}`.execute(db);
  // The tenants differ in their supplier's code and (in the staged data too) their identifiers' suffix.
  const same = (book: unknown) => JSON.parse(JSON.stringify(book).replaceAll(supplier, 'SUPPLIER').replace(/(MPAN-\w+-\d+)-B"/g, '$1"')) as unknown;
  return Object.fromEntries(rows.map((r) => [r.ext, same(r.book)]));
}

describe('a chunk of new, clean records', () => {
  test('is written set-based exactly as the endpoints write its records one call at a time', async () => {
    const chunked = await createTenant(t, { customerEmails: true });
    const alone = await createTenant(t, { customerEmails: true });
    const records = Array.from({ length: 12 }, (_, i) => fullRecord(chunked, i + 1));
    const { lines } = await runJob(chunked, records);
    assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.created]), records.map((_, i) => [i + 1, 'succeeded', true]));
    // The chunks were written as sets: their accounts share their create attempt's start.
    const { rows: starts } = await sql<{ n: number }>`SELECT count(DISTINCT started_at)::int AS n FROM create_attempts c
      JOIN import_suppliers s ON s.id = c.supplier_id WHERE s.code = ${chunked.supplier}`.execute(db);
    assert.ok(starts[0]!.n <= 2, `${starts[0]!.n} attempt starts for 12 accounts in two chunks`);

    // The same book through the endpoints, each account under the same number (its electricity
    // identifiers made its own: an identifier is on one account only).
    for (const record of records) {
      const account = JSON.parse(JSON.stringify({ ...record.account, import_supplier: alone.supplier }).replace(/"(MPAN-\w+-\d+)"/g, '"$1-B"')) as AccountData;
      const base = { import_supplier: alone.supplier, external_account_number: account.external_account_number };
      assert.equal((await call(t.app, 'POST', STAGE_URL, { token: alone.token, body: account })).status, 201);
      const made = await call(t.app, 'POST', PROCESS_URL, { token: alone.token, body: {
        import_supplier_code: alone.supplier, external_account_number: account.external_account_number, operations_team_name: alone.team,
      } });
      assert.equal(made.status, 201, made.body);
      for (const [url, body] of [
        ['/v1/data-import/historical-statements/create/', { ...base, statements: record.statements }],
        ['/v1/data-import/transactions/create/', { ...base, transactions: record.transactions }],
        ['/v1/data-import/notes/create/', { ...base, notes: record.notes }],
      ] as const) {
        const res = await call(t.app, 'POST', url, { token: alone.token, body });
        assert.ok(res.status === 200 || res.status === 201, `${url}: ${res.status} ${res.body}`);
      }
    }
    const [a, b] = [await storedBook(chunked.supplier), await storedBook(alone.supplier)];
    assert.equal(Object.keys(a).length, 12);
    assert.deepEqual(a, b);
    // Welcome emails: one per customer with an email, as a create of one queues them.
    const { rows: emails } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox_emails o JOIN accounts a ON a.id = o.account_id
      JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${chunked.supplier}`.execute(db);
    assert.equal(emails[0]!.n, 12);
  });
});

describe('a chunk whose drawn account numbers collide', () => {
  test('an account whose number is taken (by a stored account, or earlier in its own set) is written again under another, whole and once', async () => {
    const tenant = await createTenant(t, { customerEmails: true });
    // A stored account holds the first number drawn.
    const holder = await newAccountRow(t, tenant);
    const held = await db.insertInto('accounts').values(holder).returning('id').executeTakeFirstOrThrow();
    const supplier = (await findSupplierByCode(db, tenant.supplier))!;
    const team = (await findTeamByName(db, tenant.team))!;
    const payloads = Array.from({ length: 3 }, () => accountPayload(tenant.supplier))
      .sort((a, b) => (a.external_account_number < b.external_account_number ? -1 : 1));
    // The set's first account draws the holder's number; the second and the third draw one number
    // together (the third collides with the second, in the same statement); then each a free one.
    const suffix = Date.now().toString(36).toUpperCase().slice(-6);
    const draws = [holder.number, `A-DU${suffix}`, `A-DU${suffix}`, `A-R1${suffix}`, `A-R2${suffix}`];
    let drawn = 0;
    const imports = createImports({
      store: t.store, events: t.events, queue: t.queue, clock: t.clock, processConcurrencyLimit: 0, drawAccountNumber: () => draws[drawn++]!,
    });
    const created = await db.transaction().execute((trx) => imports.createNewAccounts(trx, supplier, team.id,
      payloads.map((data) => ({ externalAccountNumber: data.external_account_number, data }))));
    assert.equal(drawn, 5);
    assert.deepEqual(created.map((c) => [c.externalAccountNumber, c.serviceAccountNumber]),
      payloads.map((p, i) => [p.external_account_number, [draws[3], draws[1], draws[4]][i]]));

    // Nothing of the set landed on the holder.
    for (const table of ['customers', 'supply_addresses', 'supply_points', 'notes', 'outbox_emails'] as const) {
      const rows = await db.selectFrom(table).select('id').where('account_id', '=', held.id).execute();
      assert.equal(rows.length, 0, `${table} under the holder`);
    }
    // Each account holds its own tree, once, linked from its import, and its customers' emails carry its number.
    for (const [i, c] of created.entries()) {
      const payload = payloads[i]!;
      const account = await db.selectFrom('accounts').select(['id', 'number', 'account_import_id', 'metadata']).where('id', '=', c.accountId).executeTakeFirstOrThrow();
      assert.equal(account.number, c.serviceAccountNumber);
      assert.deepEqual(account.metadata, payload.metadata);
      const linked = await db.selectFrom('account_imports').select('account_id').where('id', '=', account.account_import_id).executeTakeFirstOrThrow();
      assert.equal(linked.account_id, c.accountId);
      const customers = await db.selectFrom('customers').select(['given_name', 'email']).where('account_id', '=', c.accountId).orderBy('position').execute();
      assert.deepEqual(customers.map((x) => [x.given_name, x.email]), payload.customers.map((x) => [x.given_name, x.email ?? null]));
      const points = await db.selectFrom('supply_points').select(['id', 'identifier']).where('account_id', '=', c.accountId).orderBy('id').execute();
      assert.deepEqual(points.map((p) => p.identifier), supplyPointsOf(payload).map((ref) => (ref.point.supply_type === 'ELECTRICITY' ? ref.point.identifier : null)));
      const meters = await db.selectFrom('meters').select('serial_number').where('supply_point_id', 'in', points.map((p) => p.id)).orderBy('id').execute();
      assert.deepEqual(meters.map((m) => m.serial_number),
        supplyPointsOf(payload).flatMap((ref) => (ref.point.supply_type === 'ELECTRICITY' ? (ref.point.meters ?? []).map((m) => m.serial_number) : [])));
      const emails = await db.selectFrom('outbox_emails').select(['recipient', 'subject']).where('account_id', '=', c.accountId).orderBy('id').execute();
      assert.deepEqual(emails.map((e) => [e.recipient, e.subject.includes(c.serviceAccountNumber)]),
        payload.customers.filter((x) => x.email).map((x) => [x.email, true]));
    }
  });
});

describe('a chunk with poisoned records', () => {
  test('a rule failure, a conflict with the store and an unexpected error each fail their own record only', async () => {
    const tenant = await createTenant(t);
    const stored = await stageAndCreate(t, tenant);
    const records: Array<ReturnType<typeof fullRecord> | { account: AccountData }> = Array.from({ length: 12 }, (_, i) => fullRecord(tenant, i + 1));
    // Line 2: a rule (a mobile number that is not one). Line 5: a supply point already on a stored account.
    (records[1] as { account: AccountData }).account.customers[0]!.mobile = '+44 12';
    const taken = (stored.payload.supply_addresses[0]!.supply_points[0] as { identifier: string }).identifier;
    (records[4]!.account.supply_addresses[0]!.supply_points[0] as { identifier: string }).identifier = taken;
    // Line 9: a note the database refuses and no rule checks (a constraint added for the test).
    (records[8] as ReturnType<typeof fullRecord>).notes[0] = { body: 'POISON' };
    await sql`ALTER TABLE notes ADD CONSTRAINT test_poison_note CHECK (body IS DISTINCT FROM 'POISON')`.execute(db);
    logged.length = 0;
    try {
      const { lines } = await runJob(tenant, records);
      const verdicts = lines.map((l) => [l.line, l.outcome, l.step, l.errors.map((e) => e.code)]);
      assert.deepEqual(verdicts, records.map((_, i) => {
        if (i === 1) return [2, 'failed', 'account', ['invalid_phone_number']];
        if (i === 4) return [5, 'failed', 'account', ['supply_point_already_registered']];
        if (i === 8) return [9, 'failed', 'notes', ['internal_error']];
        return [i + 1, 'succeeded', null, []];
      }), JSON.stringify(lines.filter((l) => l.outcome !== 'succeeded')));
      // Lines 1 to 6 were one chunk: its clean records (1, 3, 4, 6) were written as one set, sharing
      // their create attempt's start; lines 7 to 12 were rolled back by line 9 and ran one at a time.
      const { rows: starts } = await sql<{ ext: string; started: string }>`SELECT external_account_number AS ext, started_at::text AS started
        FROM create_attempts c JOIN import_suppliers s ON s.id = c.supplier_id WHERE s.code = ${tenant.supplier} AND c.outcome = 'created'`.execute(db);
      const startOf = new Map(starts.map((r) => [r.ext, r.started]));
      const lineStarts = (lines: number[]) => new Set(lines.map((l) => startOf.get(records[l - 1]!.account.external_account_number)));
      assert.equal(lineStarts([1, 3, 4, 6]).size, 1);
      assert.equal(lineStarts([7, 8, 10, 11, 12]).size, 5);
      // The unexpected error rolled its chunk back (logged), and was logged again, with its stack, for its record.
      assert.ok(logged.some((l) => l.msg.includes('chunk was rolled back')), JSON.stringify(logged.map((l) => l.msg)));
      assert.ok(logged.some((l) => l.msg === 'migration record failed unexpectedly' && (l.obj as { line?: number }).line === 9));
      // Every record that succeeded holds its whole history once.
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM transactions x JOIN accounts a ON a.id = x.account_id
        JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${tenant.supplier}`.execute(db);
      assert.equal(rows[0]!.n, 9 * 4 + 4, 'nine records succeeded, and line 9 failed after its transactions');
    } finally {
      await sql`ALTER TABLE notes DROP CONSTRAINT test_poison_note`.execute(db);
    }
  });

  test('a supply point another account takes while the chunk is written fails that record only', { skip: PG_ONLY }, async () => {
    const tenant = await createTenant(t);
    const other = await createTenant(t);
    const records = Array.from({ length: 12 }, (_, i) => fullRecord(tenant, i + 1));
    const contested = (records[6]!.account.supply_addresses[0]!.supply_points[0] as { identifier: string }).identifier;
    // Another session holds a new account with line 7's identifier, not yet committed: the chunk's
    // reads do not see it, its write waits on it, and finds it taken once it commits.
    const session = await pgSession(t.config.databaseUrl);
    const rivalPid: number = (await session.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    try {
      const rival = accountPayload(other.supplier);
      (rival.supply_addresses[0]!.supply_points[0] as { identifier: string }).identifier = contested;
      await session.query('BEGIN');
      const { rows: [row] } = await session.query<{ id: number }>(`INSERT INTO account_imports (supplier_id, external_account_number, data)
        SELECT id, $2, '{}' FROM import_suppliers WHERE code = $1 RETURNING id`, [other.supplier, rival.external_account_number]);
      const { rows: [acc] } = await session.query<{ id: number }>(`INSERT INTO accounts (account_import_id, supplier_id, external_account_number, number,
        operations_team_id, billing_street_address, billing_country, billing_postal_code, metadata)
        SELECT $1::int8, s.id, $2, 'A-RIVAL-' || $1::text, (SELECT id FROM operations_teams LIMIT 1), 'x', 'GB', 'BS1 5TY', '[]' FROM import_suppliers s WHERE s.code = $3 RETURNING id`,
      [row!.id, rival.external_account_number, other.supplier]);
      const { rows: [address] } = await session.query<{ id: number }>(`INSERT INTO supply_addresses (account_id, position, supply_address1, supply_postcode)
        VALUES ($1, 0, 'x', 'BS1 5TY') RETURNING id`, [acc!.id]);
      await session.query(`INSERT INTO supply_points (account_id, supply_address_id, position, supply_type, supply_start_date, identifier, details)
        VALUES ($1, $2, 0, 'ELECTRICITY', '2020-01-01', $3, '{}')`, [acc!.id, address!.id, contested]);
      const job = runJob(tenant, records);
      // The chunk waits on the rival's row: let it, then commit the rival. The look is taken outside
      // the rival's transaction, which would see pg_stat_activity as it was at its first look.
      await waitUntil(async () => {
        const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE ${rivalPid}::int = ANY(pg_blocking_pids(pid))`.execute(db);
        return rows[0]!.n > 0;
      }, 'a chunk waits on the rival account', 20_000);
      await session.query('COMMIT');
      const { lines } = await job;
      assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.errors.map((e) => e.code)]), records.map((_, i) =>
        (i === 6 ? [7, 'failed', ['supply_point_already_registered']] : [i + 1, 'succeeded', []])));
    } finally {
      await session.end();
    }
  });
});

describe('a record whose transactions fall inside its own statements', () => {
  test('its statements are imported first, then its transactions moved into the open period with a pinned note', async () => {
    const tenant = await createTenant(t);
    const records = Array.from({ length: 4 }, (_, i) => fullRecord(tenant, i + 1));
    // Line 3's first transaction is dated in January, a period its own statements close (up to 29 February).
    const moved = records[2]!;
    const ext = moved.account.external_account_number;
    (moved.transactions[0] as { transaction_date: string }).transaction_date = '2024-01-15';
    const { lines } = await runJob(tenant, records);
    assert.deepEqual(lines.map((l) => [l.line, l.outcome, l.errors.map((e) => e.code)]), records.map((_, i) => [i + 1, 'succeeded', []]));
    const { rows } = await sql<{ id: string; date: string; description: string | null }>`SELECT x.transaction_id AS id,
        x.transaction_date::text AS date, x.description FROM transactions x JOIN accounts a ON a.id = x.account_id
      JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${tenant.supplier} AND a.external_account_number = ${ext}
      ORDER BY x.transaction_id`.execute(db);
    assert.deepEqual(rows.map((r) => [r.id, r.date]), [[`${ext}-T1`, '2024-03-01'], [`${ext}-T2`, '2024-03-05'], [`${ext}-T3`, '2024-03-09'], [`${ext}-T4`, '2024-03-12']]);
    assert.equal(rows[0]!.description, 'Dated 2024-01-15, before the open statement period; moved to its first day, 2024-03-01.');
    const { rows: notes } = await sql<{ body: string }>`SELECT n.body FROM notes n JOIN accounts a ON a.id = n.account_id
      JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${tenant.supplier} AND a.external_account_number = ${ext}
        AND n.is_pinned AND n.body LIKE 'Imported transactions%'`.execute(db);
    assert.deepEqual(notes.map((n) => n.body), [`Imported transactions dated before the open statement period were moved to its first day, 2024-03-01: ${ext}-T1 (2024-01-15).`]);
    // The other records' transactions are stored as sent.
    const { rows: others } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM transactions x JOIN accounts a ON a.id = x.account_id
      JOIN import_suppliers s ON s.id = a.supplier_id WHERE s.code = ${tenant.supplier} AND x.description IS NOT NULL`.execute(db);
    assert.equal(others[0]!.n, 1);
  });
});
