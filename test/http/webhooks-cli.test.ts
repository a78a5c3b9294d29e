import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { runImportAdmin } from '../../src/cli/import-admin.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openStore } from '../../src/db/store.ts';
import * as admin from '../../src/modules/admin/index.ts';
import { unique } from '../support/test-app.ts';
import { seededDataDir } from '../support/pglite-template.ts';

// import-admin webhook … (D13) on the store of this pass (a temporary embedded DATA_DIR, or
// DATABASE_URL). Run in-process through runImportAdmin, the function bin/import-admin.js calls
// (cli.test.ts covers the spawned binary; a spawn per command costs seconds on a busy machine).
// Like the other commands: --json prints one JSON object, a failure too (`{"error": {"code", "message"}}`,
// nothing on stderr), with status 1 (the operation was refused) or 2 (the command line).
const dataDir = await seededDataDir('webhooks-cli-');
after(() => rmSync(dataDir, { recursive: true, force: true }));
const env = { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? '', DATA_DIR: dataDir, DEMO_SEED: 'false' };

interface Run { status: number | null; stdout: string; stderr: string }

async function cli(args: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await runImportAdmin(args, { env, out: (text) => { stdout += text; }, err: (text) => { stderr += text; } });
  return { status, stdout, stderr };
}

async function json(...args: string[]): Promise<any> {
  const run = await cli([...args, '--json']);
  assert.equal(run.status, 0, `${args.join(' ')}: ${run.stderr}`);
  assert.equal(run.stderr, '');
  assert.match(run.stdout, /^\{.*\}\n$/, 'exactly one JSON object on one line');
  return JSON.parse(run.stdout);
}

async function fails(args: string[], status: number, code: string, message: string): Promise<void> {
  const run = await cli([...args, '--json']);
  assert.deepEqual(run, { status, stdout: `${JSON.stringify({ error: { code, message } })}\n`, stderr: '' });
}

const org = unique('org');
{
  const store = await openStore({ databaseUrl: process.env.DATABASE_URL || undefined, dataDir, poolSize: 1 });
  await migrate(store);
  await admin.createOrganisation(store.db, org);
  await store.close();
}

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const ID = /^wh_[0-9a-f]{16}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('import-admin webhook commands', () => {
  test('create (all types, then filtered), list, deliveries, delete', async () => {
    const all = await json('webhook', 'create', org, '--url', 'https://hooks.example.com/in');
    assert.match(all.webhook, ID);
    assert.match(all.secret, SECRET);
    assert.deepEqual(all, { webhook: all.webhook, url: 'https://hooks.example.com/in', events: null, secret: all.secret });

    const some = await json('webhook', 'create', org, '--url', 'http://hooks.example.com:8080/x?y=1',
      '--events', 'import_process.completed,import_process.failed');
    assert.deepEqual(some, {
      webhook: some.webhook, url: 'http://hooks.example.com:8080/x?y=1', events: ['import_process.completed', 'import_process.failed'], secret: some.secret,
    });
    assert.notEqual(some.secret, all.secret);

    const listed = await json('webhook', 'list', org);
    for (const w of listed.webhooks) assert.match(w.created_at, ISO);
    // The secret is shown once, at creation: never in the list.
    assert.deepEqual(listed, {
      organisation: org,
      webhooks: [
        { webhook: all.webhook, url: 'https://hooks.example.com/in', events: null, enabled: true, disabled_reason: null, created_at: listed.webhooks[0].created_at },
        { webhook: some.webhook, url: 'http://hooks.example.com:8080/x?y=1', events: ['import_process.completed', 'import_process.failed'], enabled: true, disabled_reason: null, created_at: listed.webhooks[1].created_at },
      ],
    });

    assert.deepEqual(await json('webhook', 'deliveries', all.webhook), { webhook: all.webhook, deliveries: [] });
    assert.deepEqual(await json('webhook', 'delete', all.webhook), { deleted: all.webhook });
    assert.deepEqual((await json('webhook', 'list', org)).webhooks.map((w: any) => w.webhook), [some.webhook]);
    await fails(['webhook', 'delete', all.webhook], 1, 'not_found', `no webhook "${all.webhook}"`);
    await fails(['webhook', 'deliveries', all.webhook], 1, 'not_found', `no webhook "${all.webhook}"`);
  });

  test('disable and enable: the reason is kept while disabled and cleared by enable; both are idempotent', async () => {
    const hook = await json('webhook', 'create', org, '--url', 'https://toggle.example.com/in');
    const listedView = async () => (await json('webhook', 'list', org)).webhooks.find((w: any) => w.webhook === hook.webhook);
    const createdAt = (await listedView()).created_at;
    const view = (enabled: boolean, reason: string | null) => ({
      webhook: hook.webhook, url: 'https://toggle.example.com/in', events: null, enabled, disabled_reason: reason, created_at: createdAt,
    });

    const disabled = await json('webhook', 'disable', hook.webhook, '--reason', 'receiver moving to a new host');
    assert.deepEqual(disabled, view(false, 'receiver moving to a new host'));
    // Disabled again: the first reason stays.
    assert.deepEqual(await json('webhook', 'disable', hook.webhook), view(false, 'receiver moving to a new host'));
    assert.deepEqual(await listedView(), view(false, 'receiver moving to a new host'));

    assert.deepEqual(await json('webhook', 'enable', hook.webhook), view(true, null));
    assert.deepEqual(await json('webhook', 'enable', hook.webhook), view(true, null));
    assert.deepEqual(await listedView(), view(true, null));

    // Without --reason, the reason says who and when.
    const byOperator = await json('webhook', 'disable', hook.webhook);
    assert.match(byOperator.disabled_reason, /^disabled by an operator at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.deepEqual({ ...byOperator, disabled_reason: null }, view(false, null));

    const text = await cli(['webhook', 'enable', hook.webhook]);
    assert.deepEqual(text, {
      status: 0, stderr: '',
      stdout: `Webhook ${hook.webhook} is enabled. Events recorded while it was disabled are not sent (the events feed has them).\n`,
    });
    const off = await cli(['webhook', 'disable', hook.webhook, '--reason', 'maintenance']);
    assert.deepEqual(off, {
      status: 0, stderr: '',
      stdout: `Webhook ${hook.webhook} is disabled (maintenance); no event is sent to it until it is enabled again.\n`,
    });

    await fails(['webhook', 'enable', 'wh_0000000000000000'], 1, 'not_found', 'no webhook "wh_0000000000000000"');
    await fails(['webhook', 'disable', 'wh_0000000000000000'], 1, 'not_found', 'no webhook "wh_0000000000000000"');
    const usage = 'usage: import-admin webhook disable ID [--reason TEXT] [--json]';
    await fails(['webhook', 'disable', hook.webhook, '--reason', ' '], 2, 'invalid_argument', `--reason must not be empty; ${usage}`);
    await fails(['webhook', 'disable', hook.webhook, '--reason', 'x'.repeat(501)], 2, 'invalid_argument', `--reason is longer than 500 characters; ${usage}`);
    await fails(['webhook', 'enable'], 2, 'missing_argument', 'missing ID; usage: import-admin webhook enable ID [--json]');
  });

  test('without --json: sentences, the secret on its own line', async () => {
    const run = await cli(['webhook', 'create', org, '--url', 'https://a.example.com/', '--events', 'post_import.completed']);
    assert.equal(run.status, 0, run.stderr);
    const match = /^Created webhook (wh_[0-9a-f]{16}) → https:\/\/a\.example\.com\/ for post_import\.completed\.\nSigning secret \(shown once, keep it secret\): (whsec_\S+)\n$/.exec(run.stdout);
    assert.ok(match, run.stdout);
    const list = await cli(['webhook', 'list', org]);
    assert.match(list.stdout, new RegExp(`^${match[1]} https://a\\.example\\.com/ post_import\\.completed enabled$`, 'm'));
  });

  test('refusals: bad URL, bad event type, missing --url (status 2); unknown organisation (status 1)', async () => {
    const usage = 'usage: import-admin webhook create ORG --url URL [--events TYPE,…] [--json]';
    await fails(['webhook', 'create', org, '--url', 'ftp://files.example.com/'], 2, 'invalid_argument',
      `--url must be an http or https URL, got "ftp://files.example.com/"; ${usage}`);
    await fails(['webhook', 'create', org, '--url', 'not a url'], 2, 'invalid_argument',
      `--url must be an absolute http or https URL, got "not a url"; ${usage}`);
    await fails(['webhook', 'create', org, '--url', 'https://x.example.com/', '--events', 'import_process.staged,account.deleted'], 2, 'invalid_argument',
      `unknown event type "account.deleted"; the types are import_process.staged, import_process.completed, import_process.failed, import_process.dry_run_completed, import_process.dry_run_failed, post_import.completed, migration_job.completed, migration_job.cancelled, migration_record.failed; ${usage}`);
    await fails(['webhook', 'create', org], 2, 'missing_argument', `--url is required; ${usage}`);
    await fails(['webhook', 'create', 'no-such-org', '--url', 'https://x.example.com/'], 1, 'not_found', 'no organisation named "no-such-org"');
    await fails(['webhook', 'list', 'no-such-org'], 1, 'not_found', 'no organisation named "no-such-org"');
  });

  test('--help lists the webhook commands', async () => {
    const run = await cli(['--help']);
    assert.equal(run.status, 0);
    for (const line of ['webhook create ORG', 'webhook list ORG', 'webhook enable ID', 'webhook disable ID', 'webhook delete ID', 'webhook deliveries ID',
      'import-admin webhook create ORG --url URL [--events TYPE,…] [--json]']) {
      assert.ok(run.stdout.includes(line), line);
    }
  });
});
