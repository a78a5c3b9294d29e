import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { runAdminCommand } from '../../src/cli/admin-runner.ts';
import { ADMIN_REPLY_MS, sendToAdminSocket } from '../../src/cli/admin-socket.ts';
import type { CliError } from '../../src/cli/cli-error.ts';
import { COMMANDS } from '../../src/cli/commands.ts';
import { runImportAdmin } from '../../src/cli/import-admin.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/schema.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import * as webhooks from '../../src/modules/webhooks/index.ts';
import { startMain, type MainProcess } from '../support/main-process.ts';
import { pgliteTemplate } from '../support/pglite-template.ts';

// import-admin beside a running embedded server: the server listens on DATA_DIR/admin.sock and runs
// the CLI's commands on the store it holds. Every command of the CLI's own table is run both ways on
// the same starting data (one DATA_DIR copied before either side runs): through the socket while the
// real server (`npm start`) holds one copy, and directly on the other copy with no server; output and
// exit status must be the same, once what differs by nature (secrets, times, new ids) is masked.
// With PostgreSQL the server opens no socket.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const onPostgres = Boolean(process.env.DATABASE_URL);
const base = mkdtempSync(join(tmpdir(), 'admin-socket-'));
after(() => rmSync(base, { recursive: true, force: true }));
const served = join(base, 'served');
const direct = join(base, 'direct');
const envOf = (dataDir: string) => ({ ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, DEMO_SEED: 'false' });

interface Run { status: number; stdout: string; stderr: string }

async function cli(dataDir: string, argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await runImportAdmin(argv, { env: envOf(dataDir), out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
  return { status, stdout, stderr };
}

function bin(dataDir: string, argv: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/import-admin.js', ...argv], { cwd: ROOT, env: envOf(dataDir), timeout: 60_000 },
      (error, stdout, stderr) => resolve({ status: error ? Number(error.code) : 0, stdout, stderr }));
  });
}

/** What differs between two runs by nature: secrets and key prefixes, times, new webhook ids. */
const masked = (run: Run): Run => {
  const mask = (text: string) => text
    .replace(/ak_[0-9a-f]{12}(\.[\w-]{43})?/g, 'ak_<key>')
    .replace(/whsec_[\w+/=]+/g, 'whsec_<secret>')
    .replace(/wh_[0-9a-f]{16}/g, 'wh_<id>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
  return { status: run.status, stdout: mask(run.stdout), stderr: mask(run.stderr) };
};

// The starting data, written once and copied: both sides start from the same rows (and ids).
const ORG = 'acme';
const SUPPLIER = 'ACME';
let revokable = '';
let hook = '';
if (!onPostgres) {
  const store = await openStore({ dataDir: served, initialData: await pgliteTemplate() });
  await migrate(store);
  const db = store.db;
  await admin.createOrganisation(db, ORG);
  revokable = (await admin.createApiKey(db, ORG)).api_key.split('.')[0]!;
  await admin.createSupplier(db, SUPPLIER, ORG);
  const supplier = (await admin.findSupplierByCode(db, SUPPLIER))!;
  await db.insertInto('account_imports').values({ supplier_id: supplier.id, external_account_number: 'EXT-1', data: '{}' }).execute();
  await admin.createTeam(db, 'Operations');
  await db.insertInto('payment_vendors').values([
    { code: 'pay', kind: 'http', url: 'https://pay.example/api', secret: 's3cret', timeout_ms: 5000 },
    { code: 'spare', kind: 'stripe', url: 'https://api.stripe.com', secret: null, timeout_ms: 8000 },
  ]).execute();
  hook = (await webhooks.createWebhook(db, ORG, 'https://hooks.example/a')).webhook;
  await store.close();
  cpSync(served, direct, { recursive: true });
}

/**
 * The command lines each command is run with, in order (each also with --json; `%` becomes a mark
 * of the mode, so that a create succeeds both times). A command missing here fails the test.
 */
const CASES: Record<string, string[][]> = {
  'org create': [['org', 'create', 'new-%'], ['org', 'create', ORG]],
  'key create': [['key', 'create', ORG], ['key', 'create', 'nope']],
  'key list': [['key', 'list', ORG], ['key', 'list', 'nope']],
  'key revoke': [['key', 'revoke', revokable], ['key', 'revoke', 'ak_000000000000']],
  'supplier create': [['supplier', 'create', 'NEW-%', '--org', ORG, '--status', 'paused'], ['supplier', 'create', SUPPLIER, '--org', ORG]],
  'supplier list': [['supplier', 'list'], ['supplier', 'list', '--org', 'nope']],
  'supplier show': [['supplier', 'show', SUPPLIER], ['supplier', 'show', 'NOPE']],
  'supplier set': [['supplier', 'set', SUPPLIER, '--customer-emails', '--documents-root', 'acme/docs'], ['supplier', 'set', SUPPLIER, '--status', 'open']],
  'team create': [['team', 'create', 'Team %'], ['team', 'create', 'Operations']],
  'team list': [['team', 'list']],
  'account skip': [['account', 'skip', SUPPLIER, 'EXT-1'], ['account', 'skip', SUPPLIER, 'EXT-404']],
  'vendor create': [['vendor', 'create', 'v-%', '--kind', 'http', '--url', 'https://v.example', '--secret', 'x'], ['vendor', 'create', 'pay', '--kind', 'http', '--url', 'https://p.example']],
  'vendor list': [['vendor', 'list']],
  'vendor show': [['vendor', 'show', 'pay'], ['vendor', 'show', 'nope']],
  'vendor set': [['vendor', 'set', 'pay', '--timeout-ms', '900', '--no-secret']],
  'vendor delete': [['vendor', 'delete', 'spare'], ['vendor', 'delete', 'nope']],
  'webhook create': [['webhook', 'create', ORG, '--url', 'https://hooks.example/%', '--events', 'account.created'], ['webhook', 'create', ORG, '--url', 'ftp://x']],
  'webhook list': [['webhook', 'list', ORG]],
  'webhook disable': [['webhook', 'disable', hook, '--reason', 'maintenance']],
  'webhook enable': [['webhook', 'enable', hook], ['webhook', 'enable', 'wh_0000000000000000']],
  'webhook deliveries': [['webhook', 'deliveries', hook]],
  'webhook delete': [['webhook', 'delete', hook]],
};

/** Every command line of the comparison, in order: each case as text and as --json, then each command's --help and bare form. */
function script(): string[][] {
  const lines: string[][] = [['--help'], ['no', 'such'], []];
  for (const command of COMMANDS) {
    const words = command.name.split(' ');
    lines.push([...words, '--help'], words);
    for (const argv of CASES[command.name] ?? []) {
      lines.push(argv.map((a) => a.replace('%', 't')), [...argv.map((a) => a.replace('%', 'j')), '--json']);
    }
  }
  return lines;
}

/** Run after the script on both sides, the direct side through the CLI's full entry (its own store). */
const TAIL = [['supplier', 'show', SUPPLIER, '--json'], ['team', 'list'], ['vendor', 'show', 'nope']];

/** The CLI's command runner on an open store, as the server runs it for the socket. */
async function runner(db: Kysely<Database>, argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await runAdminCommand(argv, { use: (work) => work(db) }, { out: (t) => { stdout += t; }, err: (t) => { stderr += t; } });
  return { status, stdout, stderr };
}

describe('import-admin through the admin socket of a running embedded server', { skip: onPostgres && 'the embedded store only' }, () => {
  test('every command of the CLI has a case here', () => {
    assert.deepEqual(COMMANDS.map((c) => c.name).filter((name) => !CASES[name]), []);
  });

  test('every command prints the same and exits the same as directly on a stopped store', async () => {
    // A stale socket file of a dead server is replaced.
    writeFileSync(join(served, 'admin.sock'), '');
    const server = await startMain({ DATABASE_URL: '', DATA_DIR: served, DEMO_SEED: 'false' });
    const viaSocket: Run[] = [];
    const viaSocketTail: Run[] = [];
    try {
      const socket = statSync(join(served, 'admin.sock'));
      assert.ok(socket.isSocket(), 'a Unix socket');
      assert.equal(socket.mode & 0o777, 0o600, 'only the server\'s user may connect');
      for (const argv of script()) viaSocket.push(await cli(served, argv));
      for (const argv of TAIL) viaSocketTail.push(await cli(served, argv));
      await directoryFollows(server);
      // The bin itself reaches the server (spawned twice only: each spawn costs a second or more).
      assert.deepEqual(await bin(served, ['supplier', 'show', SUPPLIER, '--json']), await cli(served, ['supplier', 'show', SUPPLIER, '--json']));
      assert.deepEqual(await bin(served, ['supplier', 'show', 'NOPE']), { status: 1, stdout: '', stderr: 'import-admin: no supplier with code "NOPE"\n' });
    } finally {
      assert.equal(await server.stop(), 0);
    }
    assert.equal(existsSync(join(served, 'admin.sock')), false, 'the socket file is removed at shutdown');

    // The direct side: the CLI's command runner on the stopped copy, opened once (opening the embedded
    // store costs a second or more, for each of the ~90 command lines), then a few lines through the
    // CLI's full entry, which opens the store itself.
    const store = await openStore({ dataDir: direct });
    try {
      for (const [i, argv] of script().entries()) {
        assert.deepEqual(masked(viaSocket[i]!), masked(await runner(store.db, argv)), `import-admin ${argv.join(' ')}`);
      }
    } finally {
      await store.close();
    }
    for (const [i, argv] of TAIL.entries()) {
      assert.deepEqual(masked(viaSocketTail[i]!), masked(await cli(direct, argv)), `import-admin ${argv.join(' ')} (own store)`);
    }
    // The comparison saw every outcome: successes, refusals (1) and command-line mistakes (2).
    assert.deepEqual(new Set(viaSocket.map((r) => r.status)), new Set([0, 1, 2]));
  });
});

/** Keys created and revoked through the socket take effect in that server at once. */
async function directoryFollows(server: MainProcess): Promise<void> {
  const obtain = (key: string) => server.fetchJson('POST', '/graphql', { query: `mutation { obtainToken(input: {APIKey: "${key}"}) { token } }` });
  const created = JSON.parse((await cli(served, ['key', 'create', ORG, '--json'])).stdout) as { api_key: string };
  const first = await obtain(created.api_key);
  assert.equal(first.status, 200);
  const token = first.json.data.obtainToken.token as string;
  const list = `/v1/data-import/all-account-import-processes/${SUPPLIER}/`;
  assert.equal((await server.fetchJson('GET', list, undefined, token)).status, 200);
  const prefix = created.api_key.split('.')[0]!;
  assert.equal((await cli(served, ['key', 'revoke', prefix])).status, 0);
  const refused = await server.fetchJson('GET', list, undefined, token);
  assert.equal(refused.status, 401, 'a token of the revoked key is refused by the next request');
  assert.equal((await obtain(created.api_key)).json.data.obtainToken, null);
}

describe('a server that takes the connection and never answers (stopped with SIGSTOP, wedged)', () => {
  test('the CLI gives up after its wait with store_unavailable, rather than waiting for ever', { timeout: 10_000 }, async () => {
    // The kernel accepts a connection on a listening socket whatever the process does: a server
    // that listens and never reads is what a stopped one looks like from the CLI.
    const path = join(base, 'frozen.sock');
    const held: Socket[] = [];
    const frozen = createServer((socket) => { held.push(socket); });
    await new Promise<void>((done) => frozen.listen(path, done));
    try {
      const began = Date.now();
      await assert.rejects(sendToAdminSocket(path, { argv: ['supplier', 'list'], json: false }, 300), (error: CliError) => {
        assert.equal(error.code, 'store_unavailable');
        assert.match(error.message, /did not answer on its admin socket .* within 0\.3 s \(it may be stopped or overloaded\); the command may or may not have run/);
        return true;
      });
      assert.ok(Date.now() - began < 5_000, 'it gave up at its limit');
      assert.equal(ADMIN_REPLY_MS, 60_000);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((done) => frozen.close(() => done()));
    }
  });
});

describe('a server on PostgreSQL', { skip: !onPostgres && 'needs DATABASE_URL' }, () => {
  test('opens no admin socket', async () => {
    const dataDir = join(base, 'postgres');
    const server = await startMain({ DATA_DIR: dataDir, DEMO_SEED: 'false' });
    try {
      assert.equal(existsSync(join(dataDir, 'admin.sock')), false);
    } finally {
      await server.stop();
    }
  });
});
