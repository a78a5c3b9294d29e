import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import { createTokenService } from '../../src/modules/auth/index.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { startMain, type MainProcess } from '../support/main-process.ts';
import { buildTestApp, call, unique } from '../support/test-app.ts';

// What operators see (D1, D10): health, readiness, metrics, the OpenAPI document and docs; and the
// real server process: the demo seed, the embedded-store lock, graceful shutdown, restarts, and
// several instances starting at once over one empty PostgreSQL.
const t = await buildTestApp();
const onPostgres = Boolean(process.env.DATABASE_URL);

describe('operational endpoints', () => {
  test('healthz and readyz answer without auth', async () => {
    assert.deepEqual(await call(t.app, 'GET', '/healthz').then((r) => [r.status, r.json]), [200, { status: 'ok' }]);
    assert.deepEqual(await call(t.app, 'GET', '/readyz').then((r) => [r.status, r.json]), [200, { status: 'ready' }]);
  });

  test('metrics are Prometheus text with request counters', async () => {
    await call(t.app, 'GET', '/healthz');
    const res = await call(t.app, 'GET', '/metrics');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.match(res.body, /^# TYPE http_requests_total counter$/m);
    assert.match(res.body, /^http_requests_total\{method="GET",route="\/healthz",status="200"\} \d+$/m);
    assert.match(res.body, /^# TYPE http_request_duration_seconds histogram$/m);
    assert.match(res.body, /^process_cpu_user_seconds_total /m);
  });

  test('the OpenAPI document is OpenAPI 3 and lists the routes, with responses and resolvable refs', async () => {
    const res = await call(t.app, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.json;
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.equal(typeof doc.info.title, 'string');
    assert.equal(typeof doc.info.version, 'string');
    assert.ok(doc.components.securitySchemes.Token);
    assert.ok(doc.paths['/graphql'].post, 'the token mutation is documented');
    assert.deepEqual(doc.paths['/graphql'].post.security, [], 'and needs no token');
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      assert.ok(path === '/graphql' || path.startsWith('/v1/data-import/'), `${path} is a documented API path`);
      for (const [method, op] of Object.entries<any>(item)) {
        assert.ok(['get', 'post', 'put', 'patch', 'delete'].includes(method), `${method} ${path}`);
        assert.ok(Object.keys(op.responses ?? {}).some((s) => /^2\d\d$/.test(s)), `${method} ${path} declares a success response`);
        assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${method} ${path} has tags`);
      }
    }
    const text = JSON.stringify(doc);
    for (const [, ref] of text.matchAll(/"\$ref":"#\/([^"]+)"/g)) {
      const target = ref!.split('/').reduce<any>((node, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
      assert.ok(target, `$ref #/${ref} resolves`);
    }
    assert.doesNotMatch(text, /__probe|\/metrics|\/healthz/, 'operational and test routes are not in it');
  });

  test('/docs is a readable HTML reference', async () => {
    let res = await t.app.inject({ method: 'GET', url: '/docs' });
    if (res.statusCode >= 300 && res.statusCode < 400) res = await t.app.inject({ method: 'GET', url: new URL(String(res.headers.location), 'http://x/docs').pathname });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/html/);
    assert.match(res.body, /<html/i);
  });
});

describe('the server process on the embedded store', { skip: onPostgres && 'embedded-store behaviour: runs in the PGlite pass' }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'import-main-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { DATABASE_URL: '', DATA_DIR: dataDir, DEMO_SEED: '' };

  test('a fresh start seeds demo data and prints a working key and curl lines; the store is locked while it runs', async () => {
    const server = await startMain(env, { waitFor: /^ Another key later/m });
    after(() => server.stop());
    const key = /Demo API key: (\S+)/.exec(server.stdout())?.[1];
    assert.match(key ?? '', /^ak_[0-9a-f]{12}\.[\w-]{43}$/);
    assert.match(server.stdout(), /organisation "demo", import supplier "DEMO" \(ongoing\), operations team "Operations"/);

    // The printed lines, run as a newcomer would paste them.
    const tokenLine = /^ {3}(TOKEN=\$\(curl .*\))$/m.exec(server.stdout())?.[1];
    const restLine = /^ {3}(curl -s http\S+\/v1\/data-import\/\S+ -H "Authorization: Token \$TOKEN")$/m.exec(server.stdout())?.[1];
    assert.ok(tokenLine && restLine, 'the banner has the token and REST curl lines');
    if (hasCurl()) {
      const out = execFileSync('bash', ['-c', `set -e; ${tokenLine}; test -n "$TOKEN"; ${restLine} -o /dev/null -w '%{http_code}'`], { encoding: 'utf8' });
      assert.equal(out.trim(), '200', 'the REST guard accepts the token from the printed curl line');
    }
    const obtained = await server.fetchJson('POST', '/graphql', {
      query: `mutation ObtainToken { obtainToken(input: {APIKey: "${key}"}) { token expiresIn refreshToken refreshExpiresIn } }`,
    });
    const token = obtained.json.data.obtainToken.token as string;
    assert.equal((await server.fetchJson('GET', '/readyz')).status, 200);

    // While it runs, a second server and the CLI refuse the directory, each with one line.
    const second = await startMain(env, { expectExit: true });
    assert.notEqual(second.exitCode, 0);
    assert.equal(second.stderr().trim().split('\n').length, 1);
    assert.match(second.stderr(), new RegExp(`in use by a running server \\(pid ${server.pid}\\); stop the server first, or use PostgreSQL`));
    assert.ok(existsSync(join(dataDir, 'server.pid')));

    // SIGTERM: a clean exit that leaves the store free; a restart seeds nothing and keeps tokens valid.
    assert.equal(await server.stop(), 0);
    assert.ok(!existsSync(join(dataDir, 'server.pid')), 'the lock is released on shutdown');
    const again = await startMain(env);
    after(() => again.stop());
    assert.doesNotMatch(again.stdout(), /DEMO DATA CREATED/);
    const rest = await again.fetchJson('GET', '/v1/data-import/all-account-import-processes/DEMO/', undefined, token);
    assert.notEqual(rest.status, 401, 'a token from before the restart is still accepted');
    assert.equal(await again.stop(), 0);
  });
});

describe('several instances over one empty PostgreSQL', { skip: !onPostgres && 'needs PostgreSQL (DATABASE_URL)' }, () => {
  async function freshDatabase(): Promise<string> {
    const name = unique('fresh').replace(/-/g, '_').toLowerCase();
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    after(async () => {
      const drop = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
    });
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    return url.toString();
  }

  test('two migrate() calls started at once both succeed, applying each migration once; token keys agree', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([openStore({ databaseUrl: url, poolSize: 2 }), openStore({ databaseUrl: url, poolSize: 2 })]);
    after(async () => { await a.close(); await b.close(); });
    const [appliedA, appliedB] = await Promise.all([migrate(a), migrate(b)]);
    const all = [...appliedA, ...appliedB].sort();
    assert.ok(all.length > 0);
    assert.equal(new Set(all).size, all.length, 'no migration applied twice');
    assert.ok(appliedA.length === 0 || appliedB.length === 0, 'one instance applied them, the other found them done');
    const rows = await a.db.selectFrom('schema_migrations' as never).select('name' as never).execute();
    assert.equal(rows.length, all.length);

    const [tokensA, tokensB] = await Promise.all([createTokenService({ db: a.db, directory: storeDirectory(a.db), clock: t.clock }, t.config),
      createTokenService({ db: b.db, directory: storeDirectory(b.db), clock: t.clock }, t.config)]);
    const { api_key: key } = await admin.createOrganisation(a.db, unique('org'));
    const pair = await tokensA.obtainWithApiKey(key);
    const identity = async (tokens: typeof tokensA) => {
      const { organisationId, apiKeyId } = await tokens.authenticate(pair.token);
      return { organisationId, apiKeyId };
    };
    assert.deepEqual(await identity(tokensB), await identity(tokensA));
  });

  test('two servers started at once both come up, and seed the demo data once', async () => {
    const url = await freshDatabase();
    // The seeding instance saves the demo key file in DATA_DIR: a directory of the test's, not ./data.
    const dataDir = mkdtempSync(join(tmpdir(), 'import-pg-seed-'));
    after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { DATABASE_URL: url, DEMO_SEED: 'true', DATA_DIR: dataDir };
    const servers: MainProcess[] = await Promise.all([startMain(env), startMain(env)]);
    after(() => Promise.all(servers.map((s) => s.stop())));
    for (const server of servers) assert.deepEqual((await server.fetchJson('GET', '/readyz')).json, { status: 'ready' });
    const store = await openStore({ databaseUrl: url, poolSize: 1 });
    after(() => store.close());
    const orgs = await store.db.selectFrom('organisations').select('name').execute();
    assert.deepEqual(orgs, [{ name: 'demo' }]);
    // With DATABASE_URL the seeding instance saves the key in its DATA_DIR.
    assert.match(readFileSync(join(dataDir, 'demo-key.txt'), 'utf8'), /^ak_[0-9a-f]{12}\.[\w-]{43}\n$/);
    for (const server of servers) assert.equal(await server.stop(), 0);
  });
});

function hasCurl(): boolean {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
