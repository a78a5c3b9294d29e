import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import { runImportAdmin } from '../../src/cli/import-admin.ts';
import { findSupplierByCode } from '../../src/modules/admin/index.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { createTokenService } from '../../src/modules/auth/index.ts';
import { storeDirectory } from '../../src/core/directory.ts';
import { systemClock } from '../../src/core/clock.ts';
import { loadConfig } from '../../src/config.ts';
import { unique } from '../support/test-app.ts';
import { seededDataDir } from '../support/pglite-template.ts';
import { startServer } from '../support/server-process.ts';

// The operator CLI (D2), spawned as operators run it (node bin/import-admin.js …), on the store of
// this pass: a temporary embedded DATA_DIR, or the PostgreSQL of DATABASE_URL. With --json every
// success prints exactly one JSON object, and every failure `{"error": {"code", "message"}}` on stdout
// and nothing on stderr; without --json a failure is one line on stderr and nothing on stdout.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const onPostgres = Boolean(process.env.DATABASE_URL);
const dataDir = await seededDataDir('import-admin-');
after(() => rmSync(dataDir, { recursive: true, force: true }));
const env = { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? '', DATA_DIR: dataDir, DEMO_SEED: 'false' };

interface Run { status: number | null; stdout: string; stderr: string }

function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/import-admin.js', ...args], { cwd: ROOT, env: { ...env, ...extraEnv }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
  });
}

/** Runs a command with --json; asserts success and one JSON object on stdout, and returns it. */
async function json(...args: string[]): Promise<Record<string, unknown>> {
  const run = await cli([...args, '--json']);
  assert.equal(run.status, 0, `${args.join(' ')}: ${run.stderr}`);
  assert.equal(run.stderr, '');
  assert.match(run.stdout, /^\{.*\}\n$/, 'exactly one JSON object on one line');
  const value = JSON.parse(run.stdout);
  assert.equal(typeof value, 'object');
  return value;
}

/**
 * Asserts a failure under --json: the exit status, the error object alone on stdout (its message
 * matching `reason`), nothing on stderr.
 */
async function fails(args: string[], status: number, code: string, reason: RegExp, extraEnv: Record<string, string> = {}): Promise<void> {
  const run = await cli([...args, '--json'], extraEnv);
  assert.equal(run.status, status, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
  assert.equal(run.stderr, '');
  assert.match(run.stdout, /^\{"error":\{"code":"[a-z_]+","message":"[^\n]+"\}\}\n$/, 'one error object on one line');
  const { error } = JSON.parse(run.stdout);
  assert.deepEqual(Object.keys(error), ['code', 'message']);
  assert.equal(error.code, code);
  assert.match(error.message, reason);
}

/** The store the CLI wrote to, opened between CLI runs (the embedded one serves one process at a time). */
async function withStore<T>(work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const store = await openStore({ databaseUrl: process.env.DATABASE_URL || undefined, dataDir, poolSize: 1 });
  try {
    await migrate(store);
    return await work(store.db);
  } finally {
    await store.close();
  }
}

const API_KEY = /^ak_[0-9a-f]{12}\.[\w-]{43}$/;

// Staged data for `account skip`, written before the CLI runs; what the CLI did is checked at the end,
// in one opening of the store (each opening of the embedded store costs a second or more).
const staged = { org: unique('org'), supplier: unique('SUP'), external: unique('EXT') };
await withStore(async (db) => {
  await admin.createOrganisation(db, staged.org);
  const { code } = await admin.createSupplier(db, staged.supplier, staged.org);
  const row = await findSupplierByCode(db, code);
  await db.insertInto('account_imports').values({ supplier_id: row!.id, external_account_number: staged.external, data: '{}' }).execute();
});

describe('import-admin commands with --json', () => {
  const org = unique('org');
  const supplier = unique('SUP');
  const made: { key?: string; revokedKey?: string; vendor?: string } = {};

  test('org create: the organisation and its first key; a duplicate fails', async () => {
    const created = await json('org', 'create', org);
    assert.deepEqual(Object.keys(created), ['organisation', 'api_key']);
    assert.equal(created.organisation, org);
    assert.match(String(created.api_key), API_KEY);
    await fails(['org', 'create', org], 1, 'already_exists', /^organisation ".*" already exists$/);
    made.key = String(created.api_key);
  });

  test('org create without --json says what it did and shows the key', async () => {
    const name = unique('org');
    const run = await cli(['org', 'create', name]);
    assert.equal(run.status, 0);
    assert.match(run.stdout, new RegExp(`^Created organisation "${name}"\\.\\nAPI key \\(shown once, keep it secret\\): ak_[0-9a-f]{12}\\.[\\w-]{43}\\n$`));
  });

  test('key create and key revoke; the revoked key no longer yields a token', async () => {
    const created = await json('key', 'create', org);
    assert.deepEqual(Object.keys(created), ['organisation', 'api_key']);
    assert.equal(created.organisation, org);
    const key = String(created.api_key);
    assert.match(key, API_KEY);
    const prefix = key.split('.')[0]!;
    assert.deepEqual(await json('key', 'revoke', prefix), { revoked: prefix });
    await fails(['key', 'revoke', prefix], 1, 'conflict', new RegExp(`^key ${prefix} is already revoked$`));
    made.revokedKey = key;
  });

  test('supplier create: defaults, then every flag', async () => {
    assert.deepEqual(await json('supplier', 'create', supplier, '--org', org), {
      code: supplier, organisation: org, status: 'ongoing', customer_emails: false, documents_root: '',
    });
    const other = unique('SUP');
    assert.deepEqual(await json('supplier', 'create', other, '--org', org, '--status', 'paused', '--customer-emails', '--documents-root', 'docs/acme'), {
      code: other, organisation: org, status: 'paused', customer_emails: true, documents_root: 'docs/acme',
    });
  });

  test('supplier set: the supplier after the change', async () => {
    assert.deepEqual(await json('supplier', 'set', supplier, '--status', 'complete', '--customer-emails', '--documents-root', 'root/x'), {
      code: supplier, organisation: org, status: 'complete', customer_emails: true, documents_root: 'root/x',
    });
  });

  test('team create (--json first), with the stale lock file of a dead process in DATA_DIR', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(join(dataDir, 'server.pid'), `${JSON.stringify({ pid: dead, role: 'server' })}\n`);
    const team = unique('team');
    const run = await cli(['--json', 'team', 'create', team]);
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { operations_team: team }, '--json may also come first');
    assert.equal(existsSync(join(dataDir, 'server.pid')), onPostgres, 'the stale file was taken over and released');
    rmSync(join(dataDir, 'server.pid'), { force: true });
  });

  test('account skip: marks staged data; unknown data fails', async () => {
    assert.deepEqual(await json('account', 'skip', staged.supplier, staged.external), {
      import_supplier: staged.supplier, external_account_number: staged.external, skipped: true,
    });
    await fails(['account', 'skip', staged.supplier, unique('EXT')], 1, 'not_found', /^no staged data for account/);
  });

  test('vendor create: kind, url, secret and timeout', async () => {
    const code = unique('vendor');
    assert.deepEqual(await json('vendor', 'create', code, '--kind', 'http', '--url', 'https://vendor.example/api/', '--secret', 's3cret', '--timeout-ms', '2500'), {
      vendor: code, kind: 'http', url: 'https://vendor.example/api',
    });
    made.vendor = code;
  });

  test('the store holds what the commands reported', async () => {
    await withStore(async (db) => {
      const tokens = await createTokenService({ db, directory: storeDirectory(db), clock: systemClock }, loadConfig({}));
      assert.equal(typeof (await tokens.obtainWithApiKey(made.key!)).token, 'string', 'a created key yields a token');
      await assert.rejects(tokens.obtainWithApiKey(made.revokedKey!), { code: 'authentication_failed' });
      assert.equal((await findSupplierByCode(db, supplier))?.status, 'complete');
      const skipped = await db.selectFrom('account_imports').select('skipped').where('external_account_number', '=', staged.external).executeTakeFirst();
      assert.equal(skipped?.skipped, true);
      const vendor = await db.selectFrom('payment_vendors').selectAll().where('code', '=', made.vendor!).executeTakeFirstOrThrow();
      assert.deepEqual([vendor.secret, vendor.timeout_ms], ['s3cret', 2500]);
    });
  });
});

describe('import-admin command-line mistakes (exit 2, before the store is opened)', () => {
  // In process, through the same entry the bin runs (spawning each would cost a second or two).
  const runInProcess = async (args: string[]) => {
    let stdout = '';
    let stderr = '';
    const status = await runImportAdmin(args, { env, out: (text) => { stdout += text; }, err: (text) => { stderr += text; } });
    return { status, stdout, stderr };
  };
  const cases: Array<[string[], string, string]> = [
    [[], 'missing_argument', 'no command given; run import-admin --help'],
    [['org', 'delete', 'x'], 'unknown_command', 'unknown command "org delete": org create; run import-admin --help'],
    [['--json', 'org'], 'unknown_command', '"org" needs a command: org create; run import-admin --help'],
    [['supplier'], 'unknown_command', '"supplier" needs a command: supplier create, supplier list, supplier show, supplier set; run import-admin --help'],
    [['frob', 'it'], 'unknown_command', 'unknown command "frob it"; run import-admin --help'],
    [['org', 'create'], 'missing_argument', 'missing NAME; usage: import-admin org create NAME [--json]'],
    [['team', 'create', 'a', 'b'], 'unexpected_argument', 'unexpected argument "b"; usage: import-admin team create NAME [--json]'],
    [['supplier', 'create', 'S', '--org', 'o', '--colour', 'red'], 'invalid_argument',
      'Unknown option \'--colour\'; usage: import-admin supplier create CODE --org ORG [--status ongoing|paused|complete] [--customer-emails|--no-customer-emails] [--documents-root ROOT] [--json]'],
    [['vendor', 'create', 'v', '--kind', 'ftp'], 'invalid_argument',
      '--kind must be one of http, stripe, got "ftp"; usage: import-admin vendor create CODE --kind http|stripe --url BASE_URL [--secret S] [--timeout-ms N] [--json]'],
    [['supplier', 'create', 'S'], 'missing_argument',
      '--org is required; usage: import-admin supplier create CODE --org ORG [--status ongoing|paused|complete] [--customer-emails|--no-customer-emails] [--documents-root ROOT] [--json]'],
    [['supplier', 'create', 'S', '--org', 'o', '--status', 'open'], 'invalid_argument',
      '--status must be one of ongoing, paused, complete, got "open"; usage: import-admin supplier create CODE --org ORG [--status ongoing|paused|complete] [--customer-emails|--no-customer-emails] [--documents-root ROOT] [--json]'],
    [['supplier', 'set', 'S', '--customer-emails', '--no-customer-emails'], 'invalid_argument',
      'give --customer-emails or --no-customer-emails, not both; usage: import-admin supplier set CODE [--status ongoing|paused|complete] [--customer-emails|--no-customer-emails] [--documents-root ROOT] [--json]'],
    [['vendor', 'create', 'V', '--kind', 'http'], 'missing_argument',
      '--url is required; usage: import-admin vendor create CODE --kind http|stripe --url BASE_URL [--secret S] [--timeout-ms N] [--json]'],
    [['vendor', 'create', 'V', '--kind', 'http', '--url', 'http://x', '--timeout-ms', 'soon'], 'invalid_argument',
      '--timeout-ms must be a whole number of milliseconds, got "soon"; usage: import-admin vendor create CODE --kind http|stripe --url BASE_URL [--secret S] [--timeout-ms N] [--json]'],
  ];
  for (const [args, code, message] of cases) {
    test(args.join(' ') || '(nothing)', async () => {
      assert.deepEqual(await runInProcess([...args, '--json']), {
        status: 2, stdout: `${JSON.stringify({ error: { code, message } })}\n`, stderr: '',
      });
      assert.deepEqual(await runInProcess(args.filter((a) => a !== '--json')), { status: 2, stdout: '', stderr: `import-admin: ${message}\n` });
    });
  }

  test('the bin exits 2: the reason on stderr, or with --json the error object on stdout', async () => {
    assert.deepEqual(await cli(['team', 'create']), { status: 2, stdout: '', stderr: 'import-admin: missing NAME; usage: import-admin team create NAME [--json]\n' });
    await fails(['team', 'create'], 2, 'missing_argument', /^missing NAME; usage: import-admin team create NAME \[--json\]$/);
  });

  test('--help lists every command and exits 0; --json wraps it', async () => {
    const run = await cli(['--help']);
    assert.equal(run.status, 0);
    for (const command of ['org create NAME', 'key create ORG', 'key revoke KEY_PREFIX', 'supplier create CODE', 'supplier set CODE',
      'team create NAME', 'account skip SUPPLIER EXTERNAL_ACCOUNT_NUMBER', 'vendor create CODE', '--customer-emails|--no-customer-emails',
      '--documents-root ROOT', '--kind http', '--url BASE_URL', '--secret S', '--timeout-ms N', '--json',
      'key list ORG', 'supplier list', 'supplier show CODE', 'team list', 'vendor list', 'vendor show CODE', 'vendor set CODE',
      'vendor delete CODE', '[--secret S|--no-secret]']) {
      assert.ok(run.stdout.includes(command), command);
    }
    // Every command has its line with a description, and the text cites no internal document.
    const listed = run.stdout.split('\n').filter((line) => /^ {2}[a-z]+ [a-z]+\b.* {2,}\S/.test(line));
    assert.equal(listed.length, 22);
    assert.doesNotMatch(run.stdout, /\bD\d+\b|\bspec\b|\.ts\b/);
    const wrapped = await runInProcess(['supplier', 'create', '--help', '--json']);
    assert.equal(wrapped.status, 0);
    assert.match(JSON.parse(wrapped.stdout).usage, /^Usage: import-admin supplier create CODE --org ORG/);
  });
});

describe('import-admin and the embedded store lock', () => {
  test('refuses, in one line, while a live process holds DATA_DIR (unless DATABASE_URL is set)', async () => {
    const lockedDir = mkdtempSync(join(tmpdir(), 'import-admin-locked-'));
    after(() => rmSync(lockedDir, { recursive: true, force: true }));
    mkdirSync(lockedDir, { recursive: true });
    writeFileSync(join(lockedDir, 'server.pid'), `${JSON.stringify({ pid: process.pid, role: 'server', since: new Date().toISOString() })}\n`);
    if (onPostgres) {
      const team = unique('team');
      const run = await cli(['team', 'create', team, '--json'], { DATA_DIR: lockedDir });
      assert.equal(run.status, 0, run.stderr);
      assert.deepEqual(JSON.parse(run.stdout), { operations_team: team });
    } else {
      await fails(['team', 'create', unique('team')], 1, 'store_in_use',
        new RegExp(`in use by a running server \\(pid ${process.pid}\\); stop the server first, or use PostgreSQL \\(DATABASE_URL\\)`),
        { DATA_DIR: lockedDir });
      assert.ok(existsSync(join(lockedDir, 'server.pid')), 'a live holder\'s file is left alone');
    }
  });

  test('a server started while an import-admin command holds DATA_DIR waits for it, then starts', { skip: onPostgres && 'the lock is the embedded store\'s' }, async () => {
    const dir = await seededDataDir('server-waits-');
    after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'server.pid'), `${JSON.stringify({ pid: process.pid, role: 'import-admin', since: new Date().toISOString() })}\n`);
    // Once the server says it waits, the command is done: its file goes, and the server that waited starts.
    let waited = false;
    const server = await startServer({ DATA_DIR: dir }, 30_000, (line) => {
      if (waited || !line.includes('waiting for an import-admin command to finish with the embedded store')) return;
      waited = true;
      setTimeout(() => rmSync(join(dir, 'server.pid')), 500);
    });
    try {
      assert.ok(waited, server.logs.join('\n'));
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    } finally {
      await server.stop();
    }
  });
});
