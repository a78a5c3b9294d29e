import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { runImportAdmin } from '../../src/cli/import-admin.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { isolatedDatabaseUrl } from '../support/imports.ts';
import { unique } from '../support/test-app.ts';
import { seededDataDir } from '../support/pglite-template.ts';

// import-admin's list and show commands, vendor set and delete, and how every failure is reported:
// with --json `{"error": {"code", "message"}}` alone on stdout, else one line on stderr; status 1 for a
// refused operation, 2 for a bad command line. In-process through runImportAdmin (what the bin calls),
// on a store of this file's own (a temporary DATA_DIR, or a database of its own on DATABASE_URL), so
// the global lists (teams, vendors) hold exactly what this file wrote and are pinned whole.
const dataDir = await seededDataDir('import-admin-lists-');
after(() => rmSync(dataDir, { recursive: true, force: true }));
const databaseUrl = process.env.DATABASE_URL ? await isolatedDatabaseUrl() : '';
const env = { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, DEMO_SEED: 'false' };

interface Run { status: number; stdout: string; stderr: string }

async function cli(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await runImportAdmin(args, { env: { ...env, ...extraEnv }, out: (text) => { stdout += text; }, err: (text) => { stderr += text; } });
  return { status, stdout, stderr };
}

async function json(...args: string[]): Promise<any> {
  const run = await cli([...args, '--json']);
  assert.equal(run.status, 0, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
  assert.equal(run.stderr, '');
  assert.match(run.stdout, /^\{.*\}\n$/, 'exactly one JSON object on one line');
  return JSON.parse(run.stdout);
}

const text = async (...args: string[]) => cli(args);
const ok = (stdout: string): Run => ({ status: 0, stdout, stderr: '' });

/** The same failure both ways: the error object alone on stdout with --json, one line on stderr without. */
async function fails(args: string[], status: number, code: string, message: string, extraEnv: Record<string, string> = {}): Promise<void> {
  assert.deepEqual(await cli([...args, '--json'], extraEnv), { status, stdout: `${JSON.stringify({ error: { code, message } })}\n`, stderr: '' });
  assert.deepEqual(await cli(args, extraEnv), { status, stdout: '', stderr: `import-admin: ${message}\n` });
}

// What the commands will show, written before they run, with fixed times so whole outputs can be pinned.
const T1 = '2026-01-02T03:04:05.000Z';
const T2 = '2026-02-03T04:05:06.000Z';
const T3 = '2026-03-04T05:06:07.000Z';
const org = unique('org');
const other = unique('org');
const empty = unique('org');
const s = { a: unique('A-SUP'), b: unique('B-SUP'), c: unique('C-SUP') };
const teams = ['North', 'South'];
let keys: string[] = [];
{
  const store = await openStore({ databaseUrl: databaseUrl || undefined, dataDir, poolSize: 1 });
  await migrate(store);
  const db = store.db;
  const first = await admin.createOrganisation(db, org);
  const second = await admin.createApiKey(db, org);
  await admin.createOrganisation(db, other);
  await admin.createOrganisation(db, empty);
  await db.deleteFrom('api_keys').where('organisation_id', '=', (await admin.findOrganisationByName(db, empty))!.id).execute();
  keys = [first.api_key, second.api_key];
  const [p1, p2] = keys.map((k) => k.split('.')[0]!);
  await db.updateTable('api_keys').set({ created_at: new Date(T1) }).where('prefix', '=', p1!).execute();
  await db.updateTable('api_keys').set({ created_at: new Date(T2), revoked_at: new Date(T3) }).where('prefix', '=', p2!).execute();
  await admin.createSupplier(db, s.a, org);
  await admin.createSupplier(db, s.b, org, { status: 'paused', customerEmails: true, documentsRoot: 'docs/b' });
  await admin.createSupplier(db, s.c, other);
  await db.insertInto('operations_teams').values(teams.map((name, i) => ({ name, created_at: new Date([T1, T2][i]!) }))).execute();
  await db.insertInto('payment_vendors').values([
    { code: 'pay', kind: 'http', url: 'https://pay.example/api', secret: 's3cret-never-shown', timeout_ms: 5000, created_at: new Date(T1) },
    { code: 'spare', kind: 'stripe', url: 'https://api.stripe.com', secret: null, timeout_ms: 8000, created_at: new Date(T2) },
    { code: 'used', kind: 'http', url: 'https://used.example', secret: null, timeout_ms: 5000, created_at: new Date(T3) },
  ]).execute();
  // A payment instruction names vendor `used`, on an imported account.
  const supplier = (await admin.findSupplierByCode(db, s.a))!;
  const team = (await admin.findTeamByName(db, 'North'))!;
  const staged = await db.insertInto('account_imports').values({ supplier_id: supplier.id, external_account_number: 'EXT-1', data: '{}' })
    .returning('id').executeTakeFirstOrThrow();
  const account = await db.insertInto('accounts').values({
    number: 'A-0000AAAA', account_import_id: staged.id, supplier_id: supplier.id, external_account_number: 'EXT-1',
    operations_team_id: team.id, billing_street_address: '1 Test Street', billing_country: 'GB', billing_postal_code: 'SW1A 1AA',
  }).returning('id').executeTakeFirstOrThrow();
  const used = await db.selectFrom('payment_vendors').select('id').where('code', '=', 'used').executeTakeFirstOrThrow();
  await db.insertInto('payment_instructions').values({ account_id: account.id, vendor_id: used.id, reference: 'R-1', type: 'CARD', status: 'active' }).execute();
  await store.close();
}
const [prefix1, prefix2] = keys.map((k) => k.split('.')[0]!);

describe('import-admin key list', () => {
  test('prefix, created and revoked, oldest first; never a secret', async () => {
    assert.deepEqual(await json('key', 'list', org), {
      organisation: org,
      api_keys: [{ prefix: prefix1, created_at: T1, revoked_at: null }, { prefix: prefix2, created_at: T2, revoked_at: T3 }],
    });
    const run = await text('key', 'list', org);
    assert.deepEqual(run, ok([
      'PREFIX           CREATED                   REVOKED',
      `${prefix1}  ${T1}  -`,
      `${prefix2}  ${T2}  ${T3}`,
      '',
    ].join('\n')));
    for (const key of keys) assert.ok(!run.stdout.includes(key.split('.')[1]!), 'no secret');
    assert.deepEqual(await text('key', 'list', empty), ok(`Organisation "${empty}" has no API key.\n`));
  });

  test('an unknown organisation is refused (1); a missing one is a command-line mistake (2)', async () => {
    await fails(['key', 'list', 'no-such-org'], 1, 'not_found', 'no organisation named "no-such-org"');
    await fails(['key', 'list'], 2, 'missing_argument', 'missing ORG; usage: import-admin key list ORG [--json]');
  });
});

describe('import-admin supplier list and show', () => {
  const viewA = { code: s.a, organisation: org, status: 'ongoing', customer_emails: false, documents_root: '' };
  const viewB = { code: s.b, organisation: org, status: 'paused', customer_emails: true, documents_root: 'docs/b' };
  const viewC = { code: s.c, organisation: other, status: 'ongoing', customer_emails: false, documents_root: '' };

  test('list: every supplier by code, or one organisation\'s', async () => {
    assert.deepEqual(await json('supplier', 'list'), { suppliers: [viewA, viewB, viewC] });
    assert.deepEqual(await json('supplier', 'list', '--org', org), { suppliers: [viewA, viewB] });
    const width = s.a.length + 2;
    assert.deepEqual(await text('supplier', 'list', '--org', org), ok([
      `${'CODE'.padEnd(width)}${'ORGANISATION'.padEnd(org.length + 2)}STATUS   CUSTOMER_EMAILS  DOCUMENTS_ROOT`,
      `${s.a.padEnd(width)}${org}  ongoing  off              -`,
      `${s.b.padEnd(width)}${org}  paused   on               docs/b`,
      '',
    ].join('\n')));
    assert.deepEqual(await text('supplier', 'list', '--org', empty), ok('No supplier.\n'));
    await fails(['supplier', 'list', '--org', 'no-such-org'], 1, 'not_found', 'no organisation named "no-such-org"');
    await fails(['supplier', 'list', 'extra'], 2, 'unexpected_argument', 'unexpected argument "extra"; usage: import-admin supplier list [--org ORG] [--json]');
  });

  test('show: the supplier as create and set print it', async () => {
    assert.deepEqual(await json('supplier', 'show', s.b), viewB);
    assert.deepEqual(await text('supplier', 'show', s.b),
      ok(`Supplier ${s.b} of organisation "${org}": status paused, customer emails on, documents root "docs/b".\n`));
    await fails(['supplier', 'show', 'NOPE'], 1, 'not_found', 'no supplier with code "NOPE"');
  });
});

describe('import-admin team list', () => {
  test('every team by name', async () => {
    assert.deepEqual(await json('team', 'list'), { operations_teams: [{ name: 'North', created_at: T1 }, { name: 'South', created_at: T2 }] });
    assert.deepEqual(await text('team', 'list'), ok(`NAME   CREATED\nNorth  ${T1}\nSouth  ${T2}\n`));
  });
});

describe('import-admin vendor list, show, set and delete', () => {
  test('list and show say whether a secret is set, never the secret', async () => {
    const pay = { vendor: 'pay', kind: 'http', url: 'https://pay.example/api', secret_set: true, timeout_ms: 5000, created_at: T1 };
    assert.deepEqual(await json('vendor', 'list'), {
      vendors: [
        pay,
        { vendor: 'spare', kind: 'stripe', url: 'https://api.stripe.com', secret_set: false, timeout_ms: 8000, created_at: T2 },
        { vendor: 'used', kind: 'http', url: 'https://used.example', secret_set: false, timeout_ms: 5000, created_at: T3 },
      ],
    });
    assert.deepEqual(await text('vendor', 'list'), ok([
      'CODE   KIND    URL                      SECRET  TIMEOUT_MS',
      'pay    http    https://pay.example/api  set     5000',
      'spare  stripe  https://api.stripe.com   none    8000',
      'used   http    https://used.example     none    5000',
      '',
    ].join('\n')));
    assert.deepEqual(await json('vendor', 'show', 'pay'), pay);
    assert.deepEqual(await text('vendor', 'show', 'pay'),
      ok(`Payment vendor pay (http, https://pay.example/api): secret set, timeout 5000 ms, registered ${T1}.\n`));
    await fails(['vendor', 'show', 'nope'], 1, 'not_found', 'no vendor with code "nope"');
  });

  test('set changes what is given and prints the vendor; --no-secret removes the secret', async () => {
    assert.deepEqual(await json('vendor', 'set', 'pay', '--url', 'https://pay2.example/v2/', '--timeout-ms', '900', '--no-secret'), {
      vendor: 'pay', kind: 'http', url: 'https://pay2.example/v2', secret_set: false, timeout_ms: 900, created_at: T1,
    });
    assert.deepEqual(await text('vendor', 'set', 'pay', '--secret', 'new-secret', '--kind', 'stripe'),
      ok(`Payment vendor pay (stripe, https://pay2.example/v2): secret set, timeout 900 ms, registered ${T1}.\n`));
    assert.deepEqual(await json('vendor', 'set', 'pay'), {
      vendor: 'pay', kind: 'stripe', url: 'https://pay2.example/v2', secret_set: true, timeout_ms: 900, created_at: T1,
    });
    const usage = 'usage: import-admin vendor set CODE [--kind http|stripe] [--url BASE_URL] [--secret S|--no-secret] [--timeout-ms N] [--json]';
    await fails(['vendor', 'set', 'pay', '--secret', 'x', '--no-secret'], 2, 'invalid_argument', `give --secret or --no-secret, not both; ${usage}`);
    await fails(['vendor', 'set', 'pay', '--kind', 'ftp'], 2, 'invalid_argument', `--kind must be one of http, stripe, got "ftp"; ${usage}`);
    await fails(['vendor', 'set', 'pay', '--url', 'file:///etc'], 2, 'invalid_argument', `--url must be http:// or https://; ${usage}`);
    await fails(['vendor', 'set', 'pay', '--timeout-ms', '0'], 2, 'invalid_argument', `--timeout-ms must be a whole number from 1 to 120000; ${usage}`);
    await fails(['vendor', 'set', 'nope', '--timeout-ms', '10'], 1, 'not_found', 'no vendor with code "nope"');
  });

  test('delete: a vendor no payment instruction names; one that is named is refused', async () => {
    assert.deepEqual(await json('vendor', 'delete', 'spare'), { deleted: 'spare' });
    await fails(['vendor', 'delete', 'spare'], 1, 'not_found', 'no vendor with code "spare"');
    await fails(['vendor', 'delete', 'used'], 1, 'conflict', 'vendor "used" has 1 payment instruction and cannot be deleted');
    assert.deepEqual((await json('vendor', 'list')).vendors.map((v: any) => v.vendor), ['pay', 'used']);
    assert.deepEqual(await text('vendor', 'delete', 'pay'), ok('Deleted payment vendor pay.\n'));
  });
});

describe('import-admin failures: one shape, one exit status per kind of mistake', () => {
  test('a value the service refuses after the store is open is still a command-line mistake (2)', async () => {
    await fails(['supplier', 'create', 'a/b', '--org', org], 2, 'invalid_argument',
      'code "a/b" must be 1 to 64 characters, not "." or "..", without "/", control or format characters or surrounding spaces');
    await fails(['team', 'create', ' padded'], 2, 'invalid_argument', 'team name must be 1 to 200 characters with no surrounding spaces');
  });

  test('refused operations (1): already exists, conflict, not found', async () => {
    await fails(['org', 'create', org], 1, 'already_exists', `organisation "${org}" already exists`);
    await fails(['team', 'create', 'North'], 1, 'already_exists', 'operations team "North" already exists');
    await fails(['key', 'revoke', prefix2!], 1, 'conflict', `key ${prefix2} is already revoked`);
    await fails(['supplier', 'set', 'NOPE', '--status', 'paused'], 1, 'not_found', 'no supplier with code "NOPE"');
  });

  test('a bad configuration is reported like a bad command line (2), before the store is opened', async () => {
    await fails(['team', 'list'], 2, 'invalid_configuration',
      'invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"', { LOG_LEVEL: 'verbose' });
  });

  test('--help under --json is a success, not an error', async () => {
    const run = await cli(['vendor', 'delete', '--help', '--json']);
    assert.deepEqual(run, ok(`${JSON.stringify({ usage: 'Usage: import-admin vendor delete CODE [--json]\n\ndelete a payment vendor that no payment instruction names.\n' })}\n`));
  });
});
