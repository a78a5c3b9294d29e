import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, startServer, type HttpAnswer, type ServerProcess } from '../support/server-process.ts';
import { accountPayload, processBody, ROUTES } from './fixtures.ts';
import { integrityProblems, openHarness, sessionsOf, tenantOf, withAppName } from './integrity.ts';

// An instance frozen (SIGSTOP) in the middle of a create (issue #14). Its session sits idle in a
// transaction holding the account's lock and a concurrency slot; with PROCESS_CONCURRENCY_LIMIT=1
// that one frozen create blocks every create of every instance. PostgreSQL ends the session after
// DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, rolling it back, so the other instance creates again within
// that bound. When the frozen instance resumes, its request fails cleanly and it serves again.
const url = process.env.DATABASE_URL;
const skip = url ? false : 'needs PostgreSQL: set DATABASE_URL (two instances cannot share the embedded store)';
const IDLE_TIMEOUT_MS = 2_000;
/** The bound asserted: the idle timeout plus room for a loaded machine (two shared cores). */
const BOUND_MS = IDLE_TIMEOUT_MS + 4_000;
const ACCOUNTS = 30;
const APP = `faults-frozen-${process.pid}`;

describe('an instance frozen mid-create', { skip }, () => {
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) {
      s.child.kill('SIGCONT');
      await s.kill();
    }
  });

  test('another instance creates again within DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, and the frozen one recovers', async (ctx) => {
    const h = await openHarness(url!);
    after(() => h.close());
    const db = h.t.store.db;
    const tenant = await tenantOf(h);
    const env = { PROCESS_CONCURRENCY_LIMIT: '1', DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(IDLE_TIMEOUT_MS), OUTBOX_INTERVAL_MS: '0' };
    const [a, b] = await Promise.all(['a', 'b'].map(async (name) => {
      const server = await startServer({ ...env, DATABASE_URL: withAppName(url!, `${APP}-${name}`) }, 60_000);
      servers.push(server);
      return server;
    }));

    const exts = Array.from({ length: ACCOUNTS }, (_, i) => `FROZEN-${process.pid}-${i}`);
    // An account A never touches: B's create of it meets only the limit. (One A is creating answers
    // account_import_in_progress instead, at once: test/http/create-account-concurrency.test.ts.)
    const untouched = `FROZEN-${process.pid}-untouched`;
    for (const ext of [...exts, untouched]) {
      const staged = await request(b!.url, 'POST', ROUTES.stage, { token: tenant.token, body: accountPayload(tenant.supplier, ext, { electricity: 6 }) });
      assert.equal(staged.status, 201, staged.text);
    }
    const create = (server: ServerProcess, ext: string, timeoutMs = 15_000) =>
      request(server.url, 'POST', ROUTES.process, { token: tenant.token, body: processBody(tenant.supplier, ext, tenant.team), timeoutMs });

    // A burst of creates on A, each retried after a 429 until it is answered otherwise. A is frozen
    // the moment one of its sessions holds the slot; if that create committed in between (the slot
    // is free again once A is stopped), A is resumed and frozen again.
    const answersOfA: HttpAnswer[] = [];
    let bursting = true;
    const burst = Promise.all(exts.map(async (ext) => {
      while (bursting) {
        const answer = await create(a!, ext, 60_000);
        answersOfA.push(answer);
        if (answer.status !== 429) return;
        await sleep(5);
      }
    }));
    let frozenAt = 0;
    for (let attempt = 0; attempt < 50 && frozenAt === 0; attempt += 1) {
      while ((await sessionsOf(db, `${APP}-a`)).slots === 0) await sleep(1);
      a!.child.kill('SIGSTOP');
      const stoppedAt = Date.now();
      await sleep(150);
      if ((await sessionsOf(db, `${APP}-a`)).slots === 1) frozenAt = stoppedAt;
      else a!.child.kill('SIGCONT');
    }
    bursting = false;
    assert.ok(frozenAt > 0, 'A was frozen while holding the concurrency slot');
    const created = async () => (await db.selectFrom('accounts').select('external_account_number').where('external_account_number', 'in', exts).execute())
      .map((r) => r.external_account_number);

    // While A is frozen and inside the bound, its slot blocks B: the limit counts across instances.
    const before = await created();
    const waiting = exts.filter((ext) => !before.includes(ext));
    const blocked = await create(b!, untouched);
    assert.equal(blocked.status, 429, blocked.text);
    assert.equal(blocked.json.code, 'concurrency_limit_exceeded');
    assert.ok(Date.now() - frozenAt < IDLE_TIMEOUT_MS, 'B was refused inside the bound');

    // Then PostgreSQL ends A's session: its slot comes free, and B creates again, within the bound.
    let releasedAfter = 0;
    let createdAfter = 0;
    const watchSlot = (async () => {
      while ((await sessionsOf(db, `${APP}-a`)).slots > 0 && Date.now() - frozenAt < BOUND_MS * 2) await sleep(20);
      releasedAfter = Date.now() - frozenAt;
    })();
    for (const ext of waiting) {
      for (;;) {
        const answer = await create(b!, ext);
        if (answer.status === 201 && createdAfter === 0) createdAfter = Date.now() - frozenAt;
        // A's own account stays locked (in progress) until A's session ends, like the slot.
        if (answer.status !== 429 && answer.json?.code !== 'account_import_in_progress') {
          assert.ok(answer.status === 201 || answer.json?.code === 'account_already_imported', `${ext}: ${answer.status} ${answer.text}`);
          break;
        }
        assert.ok(Date.now() - frozenAt < BOUND_MS * 2, `B still refused ${Date.now() - frozenAt} ms after the freeze`);
        await sleep(50);
      }
    }
    await watchSlot;
    ctx.diagnostic(`A's slot released ${releasedAfter} ms after the freeze; B created again after ${createdAfter} ms (idle timeout ${IDLE_TIMEOUT_MS} ms)`);
    assert.ok(releasedAfter > 0 && releasedAfter <= BOUND_MS, `slot released after ${releasedAfter} ms, bound ${BOUND_MS} ms`);
    assert.ok(createdAfter > 0 && createdAfter <= BOUND_MS, `B created after ${createdAfter} ms, bound ${BOUND_MS} ms`);
    assert.deepEqual((await created()).sort(), [...exts].sort(), 'every account exists, B made the ones A had not');

    // A resumes: its frozen create fails cleanly (its session is gone), nothing is made twice, and
    // A serves again.
    a!.child.kill('SIGCONT');
    await burst;
    const unexpected = answersOfA.filter((x) => ![201, 400, 429, 503].includes(x.status));
    assert.deepEqual(unexpected.map((x) => `${x.status} ${x.text}`), [], 'A answers 201, 400, 429 or 503');
    for (const x of answersOfA.filter((y) => y.status === 400)) {
      assert.ok(['account_already_imported', 'account_import_in_progress'].includes(x.json.code), x.text);
    }
    assert.deepEqual(await integrityProblems(db, tenant.supplier), []);
    const extra = `FROZEN-${process.pid}-after`;
    assert.equal((await request(a!.url, 'POST', ROUTES.stage, { token: tenant.token, body: accountPayload(tenant.supplier, extra) })).status, 201);
    const again = await create(a!, extra);
    assert.equal(again.status, 201, again.text);
  });
});
