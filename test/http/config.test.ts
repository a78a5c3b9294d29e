import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('an unknown LOG_LEVEL is one configuration line, not a crash of the logger', () => {
  assert.throws(() => loadConfig({ LOG_LEVEL: 'verbose' }),
    (error: unknown) => error instanceof ConfigError && error.message.includes('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'));
  assert.equal(loadConfig({ LOG_LEVEL: 'debug' }).logLevel, 'debug');
});

test('npm start with a bad setting exits 2 and says which, without a stack', () => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'verbose', DATA_DIR: 'memory://' }, encoding: 'utf8', timeout: 60_000,
  });
  assert.equal(run.status, 2);
  assert.equal(run.stderr, 'invalid configuration:\n  - LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"\n');
});
