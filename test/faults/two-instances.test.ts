import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, startServer, type HttpAnswer, type ServerProcess } from '../support/server-process.ts';
import { accountPayload, notesBody, processBody, ROUTES, supplyCharge, transaction, transactionsBody } from './fixtures.ts';
import { integrityProblems, openHarness, sessionsOf, tenantOf, withAppName } from './integrity.ts';
import { SLOT_LOCK_SPACE } from '../../src/modules/account-imports/index.ts';

// Two instances over one PostgreSQL under mixed load (D1, D6, D8): the create limit holds across
// both (sampled from pg_locks while they run; with every slot held by another session, both answer
// 429), and the same payloads fired at
// both instances make one account, one note, one row per transaction.
const url = process.env.DATABASE_URL;
const skip = url ? false : 'needs PostgreSQL: set DATABASE_URL (two instances cannot share the embedded store)';
const LIMIT = 3;
const ACCOUNTS = 30;
const APP = `faults-two-${process.pid}`;

describe('two instances over one PostgreSQL', { skip }, () => {
  const servers: ServerProcess[] = [];
  after(async () => { for (const s of servers) await s.kill(); });

  test(`the create limit of ${LIMIT} holds across both, and nothing is made twice`, async (ctx) => {
    const h = await openHarness(url!);
    after(() => h.close());
    const db = h.t.store.db;
    const tenant = await tenantOf(h);
    const [a, b] = await Promise.all(['a', 'b'].map(async (name) => {
      const server = await startServer({ DATABASE_URL: withAppName(url!, `${APP}-${name}`), PROCESS_CONCURRENCY_LIMIT: String(LIMIT), OUTBOX_INTERVAL_MS: '0' }, 60_000);
      servers.push(server);
      return server;
    }));
    const pick = (i: number) => (i % 2 === 0 ? a! : b!);

    const exts = Array.from({ length: ACCOUNTS }, (_, i) => `TWO-${process.pid}-${i}`);
    await Promise.all(exts.map(async (ext, i) => {
      const staged = await request(pick(i).url, 'POST', ROUTES.stage, { token: tenant.token, body: accountPayload(tenant.supplier, ext, { electricity: 4 }) });
      assert.equal(staged.status, 201, staged.text);
    }));

    // The slots are the database's, not an instance's: while another session holds all of them,
    // both instances refuse a create (of an account each) with 429 and a Retry-After.
    let slotsHeld!: () => void;
    let releaseSlots!: () => void;
    const held = new Promise<void>((resolve) => { slotsHeld = resolve; });
    const released = new Promise<void>((resolve) => { releaseSlots = resolve; });
    const holding = db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${SLOT_LOCK_SPACE}::int4, s) FROM generate_series(1, ${LIMIT}::int4) AS s`.execute(trx);
      slotsHeld();
      await released;
    });
    await held;
    try {
      const refused = await Promise.all([a!, b!].map((s, i) => request(s.url, 'POST', ROUTES.process, { token: tenant.token, body: processBody(tenant.supplier, exts[i]!, tenant.team) })));
      assert.deepEqual(refused.map((x) => [x.status, x.json?.code]), [[429, 'concurrency_limit_exceeded'], [429, 'concurrency_limit_exceeded']]);
      for (const x of refused) assert.ok(Number(x.headers.get('retry-after')) > 0, 'a 429 says when to retry');
    } finally {
      releaseSlots();
      await holding;
    }

    // Sample the slots held by both instances' sessions while the creates run.
    let sampling = true;
    let maxSlots = 0;
    const sampler = (async () => {
      while (sampling) {
        maxSlots = Math.max(maxSlots, (await sessionsOf(db, APP)).slots);
        await sleep(2);
      }
    })();

    // Each account's create goes to both instances at once; a 429 is retried after a pause, as a
    // well-behaved client would, until the account exists.
    const outcomes: HttpAnswer[][] = exts.map(() => []);
    const createEverywhere = async (ext: string, i: number) => {
      for (let attempt = 0; attempt < 200; attempt += 1) {
        const answers = await Promise.all([a!, b!].map((s) => request(s.url, 'POST', ROUTES.process, { token: tenant.token, body: processBody(tenant.supplier, ext, tenant.team) })));
        outcomes[i]!.push(...answers);
        if (answers.some((x) => x.status === 201 || x.json?.code === 'account_already_imported')) return;
        await sleep(20 + Math.random() * 30);
      }
    };
    // Mixed load beside the creates: re-staging of other accounts and status reads on both instances.
    const others = Array.from({ length: 10 }, (_, i) => `TWO-R-${process.pid}-${i}`);
    const mixed = async () => {
      for (let round = 0; round < 3; round += 1) {
        await Promise.all(others.map((ext, i) => request(pick(i + round).url, 'POST', ROUTES.stage, { token: tenant.token, body: accountPayload(tenant.supplier, ext) })));
        await Promise.all(exts.slice(0, 10).map((ext, i) => request(pick(i).url, 'GET', ROUTES.status(tenant.supplier, ext), { token: tenant.token })));
      }
    };
    await Promise.all([...exts.map(createEverywhere), mixed()]);
    sampling = false;
    await sampler;

    const flat = outcomes.flat();
    const unexpected = flat.filter((x) => ![201, 400, 429].includes(x.status));
    assert.deepEqual(unexpected.map((x) => `${x.status} ${x.text}`), [], 'every answer is a 201, a 400 or a 429');
    // Whether this load meets the limit depends on the machine's speed (a create is two round trips):
    // every 429 it gets is checked, and the limit itself by the sampled slots below.
    const limited = flat.filter((x) => x.status === 429);
    for (const x of limited) {
      assert.equal(x.json.code, 'concurrency_limit_exceeded');
      assert.ok(Number(x.headers.get('retry-after')) > 0, 'a 429 says when to retry');
    }
    for (const x of flat.filter((y) => y.status === 400)) {
      assert.ok(['account_already_imported', 'account_import_in_progress'].includes(x.json.code), x.text);
    }
    ctx.diagnostic(`${flat.length} create answers: ${flat.filter((x) => x.status === 201).length} created, ${limited.length} refused with 429; at most ${maxSlots} slots held at once`);
    assert.ok(maxSlots >= 1, 'the sampler saw creates running');
    assert.ok(maxSlots <= LIMIT, `at most ${LIMIT} creates ran at once across both instances, saw ${maxSlots}`);

    // Exactly one account per external number, whole, and one 201 for it in all the answers.
    for (const [i, ext] of exts.entries()) {
      assert.equal(outcomes[i]!.filter((x) => x.status === 201).length, 1, `${ext}: one 201`);
    }
    const rows = await db.selectFrom('accounts').select(['external_account_number']).where('external_account_number', 'in', exts).execute();
    assert.equal(rows.length, ACCOUNTS);
    assert.deepEqual(await integrityProblems(db, tenant.supplier), []);

    // The same note and the same transaction batch, fired at both instances at once, several times.
    const ext = exts[0]!;
    const note = notesBody(tenant.supplier, ext, [{ body: `Same note ${process.pid}` }]);
    const batch = transactionsBody(tenant.supplier, ext, [transaction(`T1-${process.pid}`), transaction(`T2-${process.pid}`), supplyCharge(`SC-${process.pid}`)]);
    const fire = (route: string, body: object) => Promise.all(Array.from({ length: 6 }, (_, i) => request(pick(i).url, 'POST', route, { token: tenant.token, body })));
    const [notes, batches] = await Promise.all([fire(ROUTES.notes, note), fire(ROUTES.transactions, batch)]);
    assert.deepEqual(notes.map((x) => x.status), Array(6).fill(201), notes.map((x) => x.text).join('\n'));
    assert.deepEqual(notes.map((x) => x.json[0].status).sort(), ['NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS']);
    assert.deepEqual(batches.map((x) => x.status), Array(6).fill(201), batches.map((x) => x.text).join('\n'));
    const added = batches.flatMap((x) => x.json.results).filter((r: { status: string }) => r.status === 'TRANSACTION_ADDED_TO_ACCOUNT');
    assert.equal(added.length, 3, 'each transaction is added once across all twelve posts');

    const account = await db.selectFrom('accounts').select('id').where('external_account_number', '=', ext).executeTakeFirstOrThrow();
    const noteRows = await db.selectFrom('notes').select('id').where('account_id', '=', account.id).where('body', '=', `Same note ${process.pid}`).execute();
    assert.equal(noteRows.length, 1);
    const txRows = await db.selectFrom('transactions').select('transaction_id').where('account_id', '=', account.id).execute();
    assert.deepEqual(txRows.map((r) => r.transaction_id).sort(), [`SC-${process.pid}`, `T1-${process.pid}`, `T2-${process.pid}`]);
  });
});
