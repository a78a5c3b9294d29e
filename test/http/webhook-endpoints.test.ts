import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { buildApp } from '../../src/app.ts';
import { EVENT_TYPES } from '../../src/modules/events/index.ts';
import { createDeliveryAgents, deliverOnce } from '../../src/modules/webhooks/index.ts';
import { insertPing } from '../../src/modules/events/index.ts';
import { plantTrigger } from '../support/accounts.ts';
import { waitUntil } from '../support/imports.ts';
import { buildTestApp, call, createTenant, type Tenant } from '../support/test-app.ts';
import { startReceiver, type Received } from '../support/webhook-receiver.ts';

// Webhook endpoints managed by the supplier over the API. Receivers listen on 127.0.0.1, so this
// file's app allows private networks and its workers deliver (retries fast: 200 ms); `strict`, a
// second app over the same store, has the production rule and refuses private URLs.
const t = await buildTestApp({ WORKER_CONCURRENCY: '2', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_BASE_MS: '200' });
const db = t.store.db;
const strict = await buildApp({ modules: t.modules, config: { ...t.config, webhookAllowPrivateNetworks: false } });
after(() => strict.close());

const BASE = '/v1/data-import/webhook-endpoints/';
const PUBLIC_URL = 'https://hooks.acme.example/migration';

function create(tenant: Tenant, body: unknown, app = t.app) {
  return call(app, 'POST', BASE, { token: tenant.token, body });
}

async function endpointFor(tenant: Tenant, url: string, extra: Record<string, unknown> = {}) {
  const res = await create(tenant, { url, ...extra });
  assert.equal(res.status, 201, res.body);
  return res.json as { id: string; secret: string; url: string };
}

const field = (code: string, detail: string, attr: string, top = code) =>
  ({ detail: top === code ? detail : 'The request failed validation.', code: top, errors: [{ detail, code, attr }] });
const notFound = (id: string) => ({ detail: `No webhook endpoint "${id}".`, code: 'not_found' });

function verify(secret: string, request: Received): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
}

/** The endpoint's delivery log over the API once `count` attempts are logged, newest first. */
async function deliveriesOf(tenant: Tenant, id: string, count: number): Promise<any[]> {
  let rows: any[] = [];
  await waitUntil(async () => {
    const res = await call(t.app, 'GET', `${BASE}${id}/deliveries/`, { token: tenant.token });
    assert.equal(res.status, 200, res.body);
    rows = res.json;
    return rows.length >= count;
  }, `${count} attempts logged for ${id}`, 20_000);
  return rows;
}

describe('webhook endpoints: create, read, change, delete', () => {
  test('create answers 201 with the secret; list and get never show it', async () => {
    const tenant = await createTenant(t);
    const res = await create(tenant, { url: PUBLIC_URL, events: ['import_process.completed'], description: 'night receiver' });
    assert.equal(res.status, 201, res.body);
    const { id, secret, created_at: createdAt, ...rest } = res.json;
    assert.match(id, /^wh_[0-9a-f]{16}$/);
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.match(createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.deepEqual(rest, { url: PUBLIC_URL, events: ['import_process.completed'], description: 'night receiver', enabled: true });
    const endpoint = { id, url: PUBLIC_URL, events: ['import_process.completed'], description: 'night receiver', enabled: true, created_at: createdAt };
    assert.deepEqual(Object.keys(res.json), ['id', 'url', 'events', 'description', 'enabled', 'created_at', 'secret']);

    const minimal = await endpointFor(tenant, 'http://hooks.acme.example:8080/b');
    const list = await call(t.app, 'GET', BASE, { token: tenant.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.json, [endpoint, { ...endpoint, id: minimal.id, url: 'http://hooks.acme.example:8080/b', events: null, description: null, created_at: list.json[1].created_at }]);
    const one = await call(t.app, 'GET', `${BASE}${id}/`, { token: tenant.token });
    assert.deepEqual([one.status, one.json], [200, endpoint]);
    assert.doesNotMatch(list.body + one.body, /whsec_/);
  });

  test('the body is checked: url required and absolute, events from the list, unknown fields refused', async () => {
    const tenant = await createTenant(t);
    const choices = EVENT_TYPES.join(', ');
    const cases: Array<[unknown, unknown]> = [
      [{}, field('required', 'This field is required.', 'url', 'invalid')],
      [{ url: 'hooks.acme.example/x' }, field('invalid', 'Enter an absolute http or https URL.', 'url')],
      [{ url: `https://hooks.acme.example/${'x'.repeat(2000)}` }, field('max_length', 'Ensure this field has no more than 2000 characters.', 'url', 'invalid')],
      [{ url: PUBLIC_URL, events: ['import_process.done'] },
        field('invalid_choice', `"import_process.done" is not a valid choice. Allowed: ${choices}.`, 'events.0', 'invalid')],
      [{ url: PUBLIC_URL, events: [] }, field('empty', 'This list may not be empty.', 'events', 'invalid')],
      [{ url: PUBLIC_URL, events: ['import_process.failed', 'import_process.failed'] }, field('duplicate', 'Items of this list must be unique.', 'events', 'invalid')],
      [{ url: PUBLIC_URL, secret: 'whsec_mine' }, field('unknown_field', 'This field is not part of the documented payload and must not be sent.', 'secret', 'invalid')],
    ];
    for (const [body, expected] of cases) {
      const res = await create(tenant, body);
      assert.deepEqual([res.status, res.json], [400, expected], JSON.stringify(body));
    }
    const list = await call(t.app, 'GET', BASE, { token: tenant.token });
    assert.deepEqual(list.json, [], 'nothing was created');
  });

  test('port 0 is 400 invalid at url, at create and at update, like ports 65536 and -1', async () => {
    const tenant = await createTenant(t);
    const { id } = await endpointFor(tenant, PUBLIC_URL);
    const portZero = field('invalid', 'Enter a port from 1 to 65535, or none for the scheme\'s default: port 0 cannot be delivered to.', 'url');
    const notUrl = field('invalid', 'Enter an absolute http or https URL.', 'url');
    const cases: Array<[string, unknown]> = [
      ['http://example.com:0/', portZero], ['https://hooks.acme.example:00/migration', portZero], ['http://[2001:4860:4860::8888]:0/', portZero],
      ['http://example.com:65536/', notUrl], ['http://example.com:-1/', notUrl],
    ];
    // t.app allows private networks (no address check), so only the URL rule answers.
    for (const [url, expected] of cases) {
      const created = await create(tenant, { url });
      assert.deepEqual([created.status, created.json], [400, expected], url);
      const updated = await call(t.app, 'PATCH', `${BASE}${id}/`, { token: tenant.token, body: { url } });
      assert.deepEqual([updated.status, updated.json], [400, expected], url);
    }
    const list = (await call(t.app, 'GET', BASE, { token: tenant.token })).json;
    assert.deepEqual(list.map((e: any) => [e.id, e.url]), [[id, PUBLIC_URL]], 'nothing created, nothing changed');
  });

  test('PATCH changes only the fields sent; enabled false disables the endpoint, true enables it again', async () => {
    const tenant = await createTenant(t);
    const { id } = await endpointFor(tenant, PUBLIC_URL, { events: ['import_process.failed'], description: 'first' });
    const url = `${BASE}${id}/`;
    const before = (await call(t.app, 'GET', url, { token: tenant.token })).json;
    let res = await call(t.app, 'PATCH', url, { token: tenant.token, body: { description: null, events: null } });
    assert.deepEqual([res.status, res.json], [200, { ...before, description: null, events: null }]);
    res = await call(t.app, 'PATCH', url, { token: tenant.token, body: { url: 'https://other.acme.example/hook', enabled: false } });
    assert.deepEqual([res.status, res.json], [200, { ...before, description: null, events: null, url: 'https://other.acme.example/hook', enabled: false }]);
    const row = await db.selectFrom('webhook_endpoints').select(['enabled', 'disabled_reason']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.match(row.disabled_reason!, /^disabled over the API at \d{4}-/);
    res = await call(t.app, 'PATCH', url, { token: tenant.token, body: { enabled: true } });
    assert.deepEqual([res.status, res.json.enabled], [200, true]);
    res = await call(t.app, 'PATCH', url, { token: tenant.token, body: {} });
    assert.deepEqual([res.status, res.json], [200, { ...before, description: null, events: null, url: 'https://other.acme.example/hook' }]);
    res = await call(t.app, 'PATCH', url, { token: tenant.token, body: { enabled: 'no' } });
    assert.deepEqual([res.status, res.json.errors.map((e: any) => e.attr)], [400, ['enabled']]);
  });

  test('DELETE answers 204; the endpoint is then unknown', async () => {
    const tenant = await createTenant(t);
    const { id } = await endpointFor(tenant, PUBLIC_URL);
    const res = await call(t.app, 'DELETE', `${BASE}${id}/`, { token: tenant.token });
    assert.deepEqual([res.status, res.body], [204, '']);
    for (const [method, path] of [['GET', ''], ['DELETE', ''], ['GET', 'deliveries/']] as const) {
      const again = await call(t.app, method, `${BASE}${id}/${path}`, { token: tenant.token });
      assert.deepEqual([again.status, again.json], [404, notFound(id)]);
    }
    assert.deepEqual((await call(t.app, 'GET', BASE, { token: tenant.token })).json, []);
  });

  test('a path id longer than 100 characters is 400 invalid at endpoint_id, a malformed path 400, a query parameter 400; no token is 401', async () => {
    const tenant = await createTenant(t);
    const res = await call(t.app, 'GET', `${BASE}${'x'.repeat(101)}/`, { token: tenant.token });
    assert.deepEqual([res.status, res.json], [400, { detail: 'The request failed validation.', code: 'invalid', errors: [
      { detail: 'Ensure this field has no more than 100 characters.', code: 'max_length', attr: 'endpoint_id' }] }]);
    const malformed = await call(t.app, 'POST', `${BASE}%E0%A4%A/test/`, { token: tenant.token });
    assert.deepEqual([malformed.status, malformed.json.code], [400, 'bad_url']);
    const query = await call(t.app, 'GET', `${BASE}?page=2`, { token: tenant.token });
    assert.deepEqual([query.status, query.json], [400, field('unknown_field', 'This field is not part of the documented payload and must not be sent.', 'page', 'invalid')]);
    const anonymous = await call(t.app, 'GET', BASE);
    assert.deepEqual([anonymous.status, anonymous.json.code], [401, 'not_authenticated']);
  });
});

describe('an endpoint deleted while its secret is rotated', () => {
  test('the rotation answers 404 not_found, as after the delete, not 500', async () => {
    const tenant = await createTenant(t);
    const { id } = await endpointFor(tenant, PUBLIC_URL);
    // The row goes between the rotation's look and its update: a trigger skips the update, as the
    // row deleted by a racing DELETE does (a probe's ten rotations beside one delete got 500s).
    const gone = await plantTrigger(db, { table: 'webhook_endpoints', event: 'UPDATE', when: `OLD.id = '${id}'` }, () => 'RETURN NULL;');
    try {
      const rotated = await call(t.app, 'POST', `${BASE}${id}/rotate-secret/`, { token: tenant.token });
      assert.deepEqual([rotated.status, rotated.json], [404, notFound(id)]);
    } finally {
      await gone.remove();
    }
  });
});

describe('tenancy: another organisation\'s endpoint answers as an unknown one', () => {
  test('every path is 404 not_found, and nothing changes', async () => {
    const owner = await createTenant(t);
    const other = await createTenant(t);
    const { id } = await endpointFor(owner, PUBLIC_URL);
    const paths: Array<[string, string, unknown]> = [
      ['GET', '', undefined], ['PATCH', '', { enabled: false }], ['DELETE', '', undefined],
      ['POST', 'rotate-secret/', undefined], ['POST', 'test/', undefined], ['GET', 'deliveries/', undefined],
    ];
    for (const [method, path, body] of paths) {
      for (const target of [id, 'wh_0000000000000000']) {
        const res = await call(t.app, method as 'GET', `${BASE}${target}/${path}`, { token: other.token, ...(body ? { body } : {}) });
        assert.deepEqual([res.status, res.json], [404, notFound(target)], `${method} ${path} ${target}`);
      }
    }
    assert.deepEqual((await call(t.app, 'GET', BASE, { token: other.token })).json, []);
    const row = await db.selectFrom('webhook_endpoints').select(['enabled', 'previous_secret']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(row, { enabled: true, previous_secret: null });
    const pings = await db.selectFrom('webhook_deliveries').select('id').where('endpoint_id', '=', id).execute();
    assert.deepEqual(pings, []);
  });
});

/** The detail of a refused address: `kind` with its article ("a loopback", "an unspecified"). */
const refused = (which: string, kind: string) => `Webhooks cannot be delivered to ${which}: it is ${kind} address.`;

/** Each URL is refused with its detail at create and at update (of one public endpoint), and nothing is created or changed. */
async function refusedAtCreateAndUpdate(tenant: Tenant, cases: Array<[string, string]>): Promise<void> {
  const { id } = await endpointFor(tenant, PUBLIC_URL);
  for (const [url, detail] of cases) {
    const expected = [400, field('webhook_url_not_allowed', detail, 'url')];
    const created = await create(tenant, { url }, strict);
    assert.deepEqual([created.status, created.json], expected, url);
    const updated = await call(strict, 'PATCH', `${BASE}${id}/`, { token: tenant.token, body: { url } });
    assert.deepEqual([updated.status, updated.json], expected, url);
  }
  const [endpoint] = (await call(strict, 'GET', BASE, { token: tenant.token })).json;
  assert.deepEqual([endpoint.id, endpoint.url], [id, PUBLIC_URL], 'nothing created, nothing changed');
}

describe('webhook_url_not_allowed', () => {
  test('loopback, private, link-local and non-http URLs are refused at create and at update', async () => {
    const tenant = await createTenant(t);
    const cases: Array<[string, string]> = [
      ['http://127.0.0.1/hook', 'Webhooks cannot be delivered to 127.0.0.1: it is a loopback address.'],
      ['http://10.0.0.1/hook', 'Webhooks cannot be delivered to 10.0.0.1: it is a private address.'],
      ['http://169.254.169.254/latest/meta-data/', 'Webhooks cannot be delivered to 169.254.169.254: it is a link-local address.'],
      ['http://[::1]:8080/hook', 'Webhooks cannot be delivered to ::1: it is a loopback address.'],
      ['http://localhost:8080/hook', 'Webhooks cannot be delivered to localhost (127.0.0.1): it is a loopback address.'],
      ['ftp://hooks.acme.example/hook', 'Webhooks are delivered over http or https only.'],
      ['https://user:pw@hooks.acme.example/hook', 'A webhook URL must not carry credentials.'],
    ];
    await refusedAtCreateAndUpdate(tenant, cases);
  });

  test('IPv6 forms embedding a blocked IPv4 (NAT64, 6to4, IPv4-compatible, -mapped, -translated) are refused with its reason; a public one passes', async () => {
    const tenant = await createTenant(t);
    // The URL's host as the service writes it back (the URL parser's normal form) names the address.
    const cases: Array<[string, string]> = [
      ['http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', refused('64:ff9b::a9fe:a9fe', 'a link-local')],
      ['http://[64:ff9b::169.254.169.254]/', refused('64:ff9b::a9fe:a9fe', 'a link-local')],
      ['http://[64:ff9b::a00:1]/hook', refused('64:ff9b::a00:1', 'a private')],
      ['http://[2002:7f00:1::]/hook', refused('2002:7f00:1::', 'a loopback')],
      ['http://[2002:a9fe:a9fe::1]:8080/hook', refused('2002:a9fe:a9fe::1', 'a link-local')],
      ['http://[::127.0.0.1]/hook', refused('::7f00:1', 'a loopback')],
      ['http://[::a9fe:a9fe]/hook', refused('::a9fe:a9fe', 'a link-local')],
      ['http://[::ffff:0:7f00:1]/hook', refused('::ffff:0:7f00:1', 'a loopback')],
      ['http://[::ffff:0:a9fe:a9fe]/hook', refused('::ffff:0:a9fe:a9fe', 'a link-local')],
      ['http://[::ffff:127.0.0.1]/hook', refused('::ffff:7f00:1', 'a loopback')],
      ['http://[::ffff:a9fe:a9fe]/hook', refused('::ffff:a9fe:a9fe', 'a link-local')],
    ];
    await refusedAtCreateAndUpdate(tenant, cases);
    // The same forms around a public IPv4 address (8.8.8.8) are accepted.
    for (const url of ['http://[64:ff9b::808:808]/hook', 'http://[2002:808:808::]/hook', 'http://[::ffff:0:808:808]/hook', 'http://[::ffff:8.8.8.8]/hook']) {
      const created = await create(tenant, { url }, strict);
      assert.deepEqual([created.status, created.json.url], [201, url.replace('8.8.8.8', '808:808')], url);
    }
  });

  test('documentation, discard-only and reserved ranges are refused, and the detail reads "an" before a vowel', async () => {
    const tenant = await createTenant(t);
    const cases: Array<[string, string]> = [
      ['http://192.0.2.1/hook', refused('192.0.2.1', 'a documentation')],
      ['http://198.51.100.7/hook', refused('198.51.100.7', 'a documentation')],
      ['https://203.0.113.250/hook', refused('203.0.113.250', 'a documentation')],
      ['http://[2001:db8::1]/hook', refused('2001:db8::1', 'a documentation')],
      ['http://[2001:db8:ffff::1]/hook', refused('2001:db8:ffff::1', 'a documentation')],
      ['http://[3fff::1]/hook', refused('3fff::1', 'a documentation')],
      ['http://[5f00::1]/hook', refused('5f00::1', 'a reserved')],
      ['http://[fec0::1]/hook', refused('fec0::1', 'a site-local')],
      ['http://192.88.99.1/hook', refused('192.88.99.1', 'a reserved')],
      ['http://[100::1]/hook', refused('100::1', 'a discard-only')],
      ['http://[100::ffff:0:0:1]/hook', refused('100::ffff:0:0:1', 'a discard-only')],
      ['http://[2001::1]/hook', refused('2001::1', 'a reserved')],
      ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook', refused('2001:0:4136:e378:8000:63bf:3fff:fdd2', 'a reserved')],
      ['http://[2001:1ff::1]/hook', refused('2001:1ff::1', 'a reserved')],
      ['http://[64:ff9b::c000:201]/hook', refused('64:ff9b::c000:201', 'a documentation')],
      ['http://0.0.0.0/hook', refused('0.0.0.0', 'an unspecified')],
      ['http://[::]/hook', refused('::', 'an unspecified')],
    ];
    for (const [url, detail] of cases) {
      const created = await create(tenant, { url }, strict);
      assert.deepEqual([created.status, created.json], [400, field('webhook_url_not_allowed', detail, 'url')], url);
    }
    assert.deepEqual((await call(strict, 'GET', BASE, { token: tenant.token })).json, [], 'nothing created');
    // Just outside those ranges is public.
    for (const url of ['http://192.0.3.1/hook', 'http://[2001:200::1]/hook', 'http://[2001:db9::1]/hook', 'http://[100:0:0:1::1]/hook']) {
      const created = await create(tenant, { url }, strict);
      assert.equal(created.status, 201, url);
    }
  });


  test('with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true private addresses are accepted (not other schemes)', async () => {
    const tenant = await createTenant(t);
    assert.equal((await create(tenant, { url: 'http://127.0.0.1:9/hook' })).status, 201);
    const ftp = await create(tenant, { url: 'ftp://127.0.0.1/hook' });
    assert.deepEqual([ftp.status, ftp.json.code], [400, 'webhook_url_not_allowed']);
  });

  test('a delivery refused at send time is logged at warn with the endpoint id', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    // A URL made private behind the API's back (by SQL), and a name that resolves to loopback.
    const byIp = await endpointFor(tenant, PUBLIC_URL);
    await db.updateTable('webhook_endpoints').set({ url: receiver.url }).where('id', '=', byIp.id).execute();
    const byName = await endpointFor(tenant, `http://localhost:${receiver.port}/hook`);
    const warnings: Array<{ obj: any; msg: string }> = [];
    const agents = createDeliveryAgents();
    after(() => agents.destroy());
    const deps = {
      db, queue: t.queue, retryBaseMs: 3_600_000, allowPrivateNetworks: false, clock: t.clock, agents,
      logger: { warn: (obj: object, msg: string) => warnings.push({ obj, msg }) },
    };
    // A ping written without its delivery job, so that only this delivery (not the app's workers) handles it.
    const ping = await db.transaction().execute((trx) => insertPing(trx));
    for (const endpoint of [byIp, byName]) {
      assert.equal(await deliverOnce(deps, { endpoint_id: endpoint.id, event_id: ping.id, attempt: 1 }), 'retry_scheduled');
    }
    assert.equal(receiver.received.length, 0, 'nothing was sent');
    const reason = (which: string) => `refused: ${which} is a loopback address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it`;
    assert.deepEqual(warnings, [
      { obj: { endpoint_id: byIp.id, event_id: ping.id, attempt: 1, reason: reason('127.0.0.1') }, msg: 'webhook delivery refused: the endpoint\'s address is not one the service may deliver to' },
      { obj: { endpoint_id: byName.id, event_id: ping.id, attempt: 1, reason: reason('localhost (127.0.0.1)') }, msg: 'webhook delivery refused: the endpoint\'s address is not one the service may deliver to' },
    ]);
    const [logged] = await deliveriesOf(tenant, byIp.id, 1);
    assert.deepEqual({ ...logged, at: undefined, latency_ms: undefined }, {
      event_id: String(ping.id), event_type: 'ping', attempt: 1, status_code: null, latency_ms: undefined, error: reason('127.0.0.1'), at: undefined,
    });
  });
});

describe('test pings and the delivery log', () => {
  test('a ping goes to that endpoint only, whatever its event filter, and shows in its log', async () => {
    const tenant = await createTenant(t);
    const pinged = await startReceiver([500]);
    const sibling = await startReceiver();
    const target = await endpointFor(tenant, pinged.url, { events: ['migration_job.completed'] });
    const other = await endpointFor(tenant, sibling.url);
    const res = await call(t.app, 'POST', `${BASE}${target.id}/test/`, { token: tenant.token });
    assert.equal(res.status, 202, res.body);
    const { id, created_at: createdAt, ...ping } = res.json;
    assert.deepEqual(ping, { type: 'ping', import_supplier: null, external_account_number: null, data: {} });
    assert.match(createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // Refused once (500), delivered by the retry: same webhook-id, the body as answered.
    const [first, second] = await pinged.waitFor(2);
    for (const request of [first!, second!]) {
      assert.equal(request.headers['webhook-id'], id);
      assert.deepEqual(verify(target.secret, request), res.json);
    }
    // No delivery job of the ping exists for the other endpoint (the fan-out never reads pings), and
    // the feed does not show it.
    const jobs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job
      WHERE name = 'webhook_delivery' AND data->>'endpoint_id' = ${other.id}`.execute(db);
    assert.deepEqual(jobs.rows, [{ n: 0 }]);
    assert.equal(sibling.received.length, 0);

    const log = await deliveriesOf(tenant, target.id, 2);
    assert.deepEqual(log.map(({ latency_ms: _l, at: _a, ...rest }) => rest), [
      { event_id: id, event_type: 'ping', attempt: 2, status_code: 200, error: null },
      { event_id: id, event_type: 'ping', attempt: 1, status_code: 500, error: 'HTTP 500' },
    ]);
    for (const row of log) {
      assert.ok(Number.isInteger(row.latency_ms) && row.latency_ms >= 0, JSON.stringify(row));
      assert.match(row.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    }
  });

  test('a disabled endpoint is sent no ping: 400 webhook_endpoint_disabled with its reason, nothing queued; enabled again, it is', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    const { id } = await endpointFor(tenant, receiver.url);
    assert.equal((await call(t.app, 'PATCH', `${BASE}${id}/`, { token: tenant.token, body: { enabled: false } })).status, 200);
    const refused = await call(t.app, 'POST', `${BASE}${id}/test/`, { token: tenant.token });
    assert.equal(refused.status, 400, refused.body);
    assert.equal(refused.json.code, 'webhook_endpoint_disabled');
    assert.match(refused.json.detail, new RegExp(`^Webhook endpoint "${id}" is disabled \\(.+\\): enable it \\(PATCH "enabled": true\\) to send it a ping\\.$`));
    const jobs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook_delivery' AND data->>'endpoint_id' = ${id}`.execute(db);
    assert.deepEqual(jobs.rows, [{ n: 0 }]);
    assert.equal((await call(t.app, 'PATCH', `${BASE}${id}/`, { token: tenant.token, body: { enabled: true } })).status, 200);
    assert.equal((await call(t.app, 'POST', `${BASE}${id}/test/`, { token: tenant.token })).status, 202);
    await receiver.waitFor(1);
  });

  test('the log pages newest first by keyset: Link header with the cursor, a foreign cursor is 400', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver([500, 500]);
    const { id } = await endpointFor(tenant, receiver.url);
    await call(t.app, 'POST', `${BASE}${id}/test/`, { token: tenant.token });
    const all = await deliveriesOf(tenant, id, 3);
    const url = `${BASE}${id}/deliveries/`;
    const pages: any[] = [];
    let next: string | undefined = `${url}?page_size=2`;
    while (next) {
      const res = await call(t.app, 'GET', next, { token: tenant.token });
      assert.equal(res.status, 200, res.body);
      pages.push(res.json);
      const link = res.headers.link as string | undefined;
      next = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      if (next) assert.match(next, new RegExp(`^${url}\\?page_size=2&cursor=[A-Za-z0-9_-]+$`));
    }
    assert.deepEqual(pages.map((p) => p.length), [2, 1]);
    assert.deepEqual(pages.flat(), all);
    assert.deepEqual(all.map((d) => d.attempt), [3, 2, 1]);
    // A key of another length is not read for its first value: [1,2,3] is not the cursor [1].
    for (const cursor of ['nonsense', Buffer.from('["x"]').toString('base64url'), Buffer.from('[1,2,3]').toString('base64url'), Buffer.from('[]').toString('base64url')]) {
      const res = await call(t.app, 'GET', `${url}?cursor=${cursor}`, { token: tenant.token });
      assert.deepEqual([res.status, res.json], [400, field('invalid', 'This cursor is not one the service gave; use the Link header of the previous page.', 'cursor')], cursor);
    }
    const big = await call(t.app, 'GET', `${url}?page_size=1001`, { token: tenant.token });
    assert.deepEqual([big.status, big.json.errors[0].attr], [400, 'page_size']);
  });
});

describe('secret rotation', () => {
  test('during the overlap both secrets verify a delivery; after it only the new one', async () => {
    const tenant = await createTenant(t);
    const receiver = await startReceiver();
    const created = await endpointFor(tenant, receiver.url);
    const rotated = await call(t.app, 'POST', `${BASE}${created.id}/rotate-secret/`, { token: tenant.token });
    assert.equal(rotated.status, 200, rotated.body);
    const { secret, previous_secret_expires_at: until, ...endpoint } = rotated.json;
    assert.deepEqual(endpoint, (await call(t.app, 'GET', `${BASE}${created.id}/`, { token: tenant.token })).json);
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.notEqual(secret, created.secret);
    const hours = (Date.parse(until) - Date.now()) / 3_600_000;
    assert.ok(hours > 23.9 && hours <= 24, `the old secret signs for 24 hours more: ${until}`);

    const ping = async () => {
      const res = await call(t.app, 'POST', `${BASE}${created.id}/test/`, { token: tenant.token });
      assert.equal(res.status, 202, res.body);
      await waitUntil(async () => receiver.received.some((r) => r.headers['webhook-id'] === res.json.id), `ping ${res.json.id} delivered`, 20_000);
      return { event: res.json, request: receiver.received.find((r) => r.headers['webhook-id'] === res.json.id)! };
    };
    const during = await ping();
    assert.match(String(during.request.headers['webhook-signature']), /^v1,\S+ v1,\S+$/, 'two signatures');
    assert.deepEqual(verify(created.secret, during.request), during.event, 'a receiver still on the old secret accepts it');
    assert.deepEqual(verify(secret, during.request), during.event, 'a receiver on the new secret accepts it');

    // The overlap's end is a stored time: move it to the past rather than wait a day.
    await db.updateTable('webhook_endpoints').set({ previous_secret_expires_at: sql<Date>`now() - interval '1 second'` })
      .where('id', '=', created.id).execute();
    const later = await ping();
    assert.match(String(later.request.headers['webhook-signature']), /^v1,\S+$/, 'one signature');
    assert.deepEqual(verify(secret, later.request), later.event);
    assert.throws(() => verify(created.secret, later.request), /No matching signature found/);
  });

  test('a second rotation ends the oldest secret at once', async () => {
    const tenant = await createTenant(t);
    const { id, secret: first } = await endpointFor(tenant, PUBLIC_URL);
    const second = (await call(t.app, 'POST', `${BASE}${id}/rotate-secret/`, { token: tenant.token })).json.secret;
    const third = (await call(t.app, 'POST', `${BASE}${id}/rotate-secret/`, { token: tenant.token })).json.secret;
    const row = await db.selectFrom('webhook_endpoints').select(['secret', 'previous_secret']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(row, { secret: third, previous_secret: second });
    assert.notEqual(first, second);
  });
});
