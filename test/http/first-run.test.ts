import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { onPostgres } from '../support/imports.ts';
import { startMain } from '../support/main-process.ts';
import { seededDataDir } from '../support/pglite-template.ts';

// A newcomer's first start (docs/operations.md#first-run): the demo key is saved to
// DATA_DIR/demo-key.txt (mode 600) before anything can fail, so a port already taken loses nothing;
// a later start says where the key is. The embedded store's behaviour: PGlite pass only. The data
// directory starts migrated and empty (no organisation yet, so the first start seeds the demo): a start
// on a directory that is not there at all is operations.test.ts's "a fresh start".
const dataDir = await seededDataDir('import-first-run-');
after(() => rmSync(dataDir, { recursive: true, force: true }));

describe('the demo key on a first start', { skip: onPostgres && 'embedded-store behaviour: runs in the PGlite pass' }, () => {
  const env = { DATABASE_URL: '', DATA_DIR: dataDir, DEMO_SEED: '' };
  const keyFile = join(dataDir, 'demo-key.txt');

  test('port taken: one line on stderr naming the port and the key file; the key is saved, mode 600', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    after(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const port = (taken.address() as { port: number }).port;

    const refused = await startMain({ ...env, PORT: String(port) }, { expectExit: true });
    assert.equal(refused.exitCode, 1);
    assert.equal(refused.stderr(), `cannot start: port ${port} on 127.0.0.1 is already in use (set PORT to a free port); the demo API key is saved in ${keyFile}\n`);
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.match(readFileSync(keyFile, 'utf8'), /^ak_[0-9a-f]{12}\.[\w-]{43}\n$/);
    assert.ok(!existsSync(join(dataDir, 'server.pid')), 'the store lock is released');
  });

  test('the next start seeds nothing, says where the key is, and the key works', async () => {
    const key = readFileSync(keyFile, 'utf8').trim();
    const server = await startMain(env, { waitFor: /its API key is in/ });
    after(() => server.stop());
    assert.doesNotMatch(server.stdout(), /DEMO DATA CREATED/);
    assert.match(server.stdout(), new RegExp(`^Demo organisation "demo" from an earlier start: its API key is in ${keyFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    const obtained = await server.fetchJson('POST', '/graphql', { query: `mutation { obtainToken(input: {APIKey: "${key}"}) { expiresIn } }` });
    assert.deepEqual(obtained, { status: 200, json: { data: { obtainToken: { expiresIn: 3600 } } } });
    assert.equal(await server.stop(), 0);
  });

  test('a key file whose key no longer works is not mentioned', async () => {
    writeFileSync(keyFile, 'ak_000000000000.not-a-key-of-this-store\n', { mode: 0o600 });
    const server = await startMain(env);
    after(() => server.stop());
    // Anything printed after listening is out once a request has been answered.
    assert.equal((await server.fetchJson('GET', '/healthz')).status, 200);
    assert.doesNotMatch(server.stdout(), /its API key is in|DEMO DATA CREATED/);
    assert.equal(await server.stop(), 0);
  });
});
