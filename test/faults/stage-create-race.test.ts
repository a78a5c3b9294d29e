import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { request, startServer, type HttpAnswer, type ServerProcess } from '../support/server-process.ts';
import { accountPayload, processBody, ROUTES } from './fixtures.ts';
import { integrityProblems, openHarness, tenantOf, withAppName } from './integrity.ts';

// Re-stages racing the create of the same account (D6, issue #14): a re-stage either lands before the
// create reads the staged data (the account is built from it) or is refused (account_already_imported
// / account_import_in_progress). So the account always holds the data of the last staging that was
// accepted, and the staged row holds nothing that was answered 200 and then never imported.
const url = process.env.DATABASE_URL;
const skip = url ? false : 'needs PostgreSQL: set DATABASE_URL (on the embedded store stage and create never overlap)';
const ACCOUNTS = 12;
const APP = `faults-race-${process.pid}`;

describe('re-stages racing a create', { skip }, () => {
  const servers: ServerProcess[] = [];
  after(async () => { for (const s of servers) await s.kill(); });

  test(`over ${ACCOUNTS} accounts, each account holds the data of its last accepted staging`, async (ctx) => {
    const h = await openHarness(url!);
    after(() => h.close());
    const db = h.t.store.db;
    const tenant = await tenantOf(h);
    const [a, b] = await Promise.all(['a', 'b'].map(async (name) => {
      const server = await startServer({ DATABASE_URL: withAppName(url!, `${APP}-${name}`), OUTBOX_INTERVAL_MS: '0', PROCESS_CONCURRENCY_LIMIT: '0' }, 60_000);
      servers.push(server);
      return server;
    }));

    const exts = Array.from({ length: ACCOUNTS }, (_, i) => `RACE-${process.pid}-${i}`);
    // Heavy accounts, so a create spends time between reading the staged data and committing.
    // A distinct, valid (and already normalised) UK postcode per re-stage: B1 0AA, B1 1AA, … B40 9AA.
    const postcodeOf = (n: number) => `B${1 + Math.floor(n / 10)} ${n % 10}AA`;
    const payload = (ext: string, postcode: string) => {
      const body = accountPayload(tenant.supplier, ext, { electricity: 6 });
      body.billing_address.postal_code = postcode;
      return body;
    };
    for (const ext of exts) {
      const staged = await request(a!.url, 'POST', ROUTES.stage, { token: tenant.token, body: payload(ext, postcodeOf(0)) });
      assert.equal(staged.status, 201, staged.text);
    }

    let refused = 0;
    let acceptedDuring = 0;
    const raceOne = async (ext: string, i: number) => {
      let lastAccepted = postcodeOf(0);
      let creating = true;
      // One client re-stages in a loop (each awaited, so "last" is well defined) while the create runs
      // on the other instance, and a little after it answered.
      const restages = (async () => {
        for (let n = 1; n < 400; n += 1) {
          const postcode = postcodeOf(n);
          const answer: HttpAnswer = await request((i % 2 ? a : b)!.url, 'POST', ROUTES.stage, { token: tenant.token, body: payload(ext, postcode), timeoutMs: 30_000 });
          if (answer.status === 200) {
            lastAccepted = postcode;
            if (creating) acceptedDuring += 1;
          } else {
            assert.equal(answer.status, 400, answer.text);
            assert.ok(['account_already_imported', 'account_import_in_progress'].includes(answer.json.code), answer.text);
            if (answer.json.code === 'account_already_imported') { refused += 1; return; }
          }
        }
        assert.fail(`${ext}: re-stages were never refused`);
      })();
      await new Promise((resolve) => setTimeout(resolve, 5 + (i % 4) * 5));
      const created = await request((i % 2 ? b : a)!.url, 'POST', ROUTES.process, { token: tenant.token, body: processBody(tenant.supplier, ext, tenant.team), timeoutMs: 30_000 });
      creating = false;
      assert.equal(created.status, 201, created.text);
      await restages;
      const account = await db.selectFrom('accounts as acc').innerJoin('account_imports as ai', 'ai.id', 'acc.account_import_id')
        .select(['acc.billing_postal_code', 'acc.number', 'ai.data'])
        .where('acc.number', '=', created.json.service_account_number).executeTakeFirstOrThrow();
      const stagedPostcode = (account.data as { billing_address: { postal_code: string } }).billing_address.postal_code;
      return { ext, built: account.billing_postal_code, lastAccepted, stagedPostcode };
    };
    const t0 = Date.now();
    const results = await Promise.all(exts.map(raceOne));
    ctx.diagnostic(`${acceptedDuring} re-stages accepted while a create ran, ${refused} refused after it, in ${Date.now() - t0} ms`);
    assert.deepEqual(
      results.filter((r) => r.built !== r.lastAccepted || r.stagedPostcode !== r.lastAccepted),
      [],
      'the account and its staged row both hold the last accepted staging',
    );
    assert.deepEqual(await integrityProblems(db, tenant.supplier), []);
  });
});
