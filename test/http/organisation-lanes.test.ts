import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { registerOrganisationLanes } from '../../src/http/organisation-lanes.ts';
import { onPostgres } from '../support/imports.ts';
import { runJobToEnd } from '../support/jobs.ts';
import { accountPayload } from '../support/payloads.ts';
import { buildTestApp, call, createTenant } from '../support/test-app.ts';

// On the embedded store, an organisation's heavy operations (a job's reconciliation, its exceptions,
// its rate, a search through its records, cancel and retry) run one at a time per organisation, so
// one organisation sending many at once holds the others up for one of them (src/http/organisation-lanes.ts).

/** A scope like the app's /v1: the caller set by a hook, the lanes, and two routes that wait for the test. */
async function laneApp() {
  const app = Fastify();
  const gates: Array<{ org: number; route: string; open: () => void }> = [];
  app.addHook('onRequest', async (request) => {
    request.caller = { organisationId: Number(request.headers['x-org']), apiKeyId: 0, findSupplier: () => Promise.resolve(undefined) };
  });
  registerOrganisationLanes(app);
  const held = (route: string) => async (request: { caller?: { organisationId: number } }) => {
    await new Promise<void>((resolve) => gates.push({ org: request.caller!.organisationId, route, open: resolve }));
    return 'done';
  };
  app.get('/heavy/', { config: { oneAtATime: true } }, held('heavy'));
  app.get('/light/', held('light'));
  app.get('/failing/', { config: { oneAtATime: true } }, async () => { throw new Error('boom'); });
  await app.ready();
  const ask = (url: string, org: number) => app.inject({ method: 'GET', url, headers: { 'x-org': String(org) } });
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
  return { app, gates, ask, settle };
}

describe('one at a time per organisation', () => {
  test('a second heavy operation of an organisation waits for the first to answer; another organisation\'s, and light ones, do not', async () => {
    const { gates, ask, settle } = await laneApp();
    const first = ask('/heavy/', 1);
    const second = ask('/heavy/', 1);
    const other = ask('/heavy/', 2);
    const light = ask('/light/', 1);
    await settle();
    const entered = () => gates.map((g) => `${g.org} ${g.route}`).sort();
    assert.deepEqual(entered(), ['1 heavy', '1 light', '2 heavy'], 'the second of organisation 1 waits');
    gates.find((g) => g.org === 1 && g.route === 'heavy')!.open();
    assert.equal((await first).body, 'done');
    await settle();
    assert.deepEqual(entered(), ['1 heavy', '1 heavy', '1 light', '2 heavy'], 'then it runs');
    for (const gate of gates) gate.open();
    assert.deepEqual((await Promise.all([second, other, light])).map((r) => r.statusCode), [200, 200, 200]);
  });

  test('an operation that fails leaves its organisation\'s line free', async () => {
    const { gates, ask, settle } = await laneApp();
    assert.equal((await ask('/failing/', 1)).statusCode, 500);
    const next = ask('/heavy/', 1);
    await settle();
    assert.equal(gates.length, 1);
    gates[0]!.open();
    assert.equal((await next).statusCode, 200);
  });

  test('a client gone before its answer keeps the line until its operation ends, then leaves it free', async () => {
    const { app, gates, settle } = await laneApp();
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const controller = new AbortController();
    const gone = fetch(`http://127.0.0.1:${port}/heavy/`, { headers: { 'x-org': '1' }, signal: controller.signal }).catch(() => 'aborted');
    await settle();
    controller.abort();
    assert.equal(await gone, 'aborted');
    const next = fetch(`http://127.0.0.1:${port}/heavy/`, { headers: { 'x-org': '1' } });
    await settle();
    assert.equal(gates.length, 1, 'quitting does not let the next one start while the first still works');
    gates[0]!.open();
    await settle();
    assert.equal(gates.length, 2, 'the next one runs once the first has ended, though its client never read the answer');
    gates[1]!.open();
    assert.equal((await next).status, 200);
    app.server.closeAllConnections();
    await app.close();
  });
});

describe('the app\'s heavy operations', { skip: onPostgres ? 'the lines are the embedded store\'s only' : false }, () => {
  test('many at once from one organisation all answer (the line is left by each)', async () => {
    const t = await buildTestApp({ WORKER_CONCURRENCY: '2' });
    const tenant = await createTenant(t);
    const { id } = await runJobToEnd(t, tenant, Array.from({ length: 3 }, () => ({ account: accountPayload(tenant.supplier) })));
    const base = `/v1/data-import/migration-jobs/${id}/`;
    const answers = await Promise.all([
      ...['reconciliation/', 'reconciliation/exceptions/', 'rate/', 'records/search/?outcome=failed'].flatMap((path) => [path, path]).map((path) =>
        call(t.app, 'GET', `${base}${path}`, { token: tenant.token })),
      call(t.app, 'POST', `${base}cancel/`, { token: tenant.token }),
      call(t.app, 'POST', `${base}retry/`, { token: tenant.token }),
    ]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200, 200, 200, 400, 200]);
  });
});
