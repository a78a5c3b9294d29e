import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

test('LOG_FORMAT is json or pretty, SHUTDOWN_DRAIN_MS a whole number: anything else is one line each', () => {
  assert.throws(() => loadConfig({ LOG_FORMAT: 'text', SHUTDOWN_DRAIN_MS: '1.5' }), (error: unknown) => error instanceof ConfigError
    && error.message === 'invalid configuration:\n  - LOG_FORMAT must be json or pretty, got "text"\n  - SHUTDOWN_DRAIN_MS must be a whole number from 0 to 600000, got "1.5"');
  assert.deepEqual([loadConfig({}).logFormat, loadConfig({}).shutdownDrainMs], ['json', 5000]);
  assert.deepEqual([loadConfig({ LOG_FORMAT: 'pretty', SHUTDOWN_DRAIN_MS: '0' }).logFormat, loadConfig({ SHUTDOWN_DRAIN_MS: '0' }).shutdownDrainMs], ['pretty', 0]);
});

test('every default the README\'s configuration table gives is the one the service uses', () => {
  const readme = readFileSync(`${ROOT}/README.md`, 'utf8');
  // Rows of the form | `NAME`, `NAME2` | `default`, `default2` | …: each variable set to its documented
  // default must change nothing. Rows whose default is not a literal (unset, derived) are skipped.
  const rows = [...readme.matchAll(/^\| ((?:`[A-Z0-9_]+`(?:, )?)+) \| ((?:`[^`|]*`(?:, )?)+) \|/gm)];
  const pairs = rows.flatMap(([, names, values]) => {
    const n = [...names!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const v = [...values!.matchAll(/`([^`]*)`/g)].map((m) => m[1]!);
    return n.length === v.length ? n.map((name, i) => [name, v[i]!] as const) : [];
  });
  assert.ok(pairs.some(([name]) => name === 'JOB_DISPATCH_WINDOW') && pairs.length >= 30, `${pairs.length} documented defaults read`);
  const defaults = loadConfig({});
  const differing = pairs.filter(([name, value]) => {
    try {
      return JSON.stringify(loadConfig({ [name]: value })) !== JSON.stringify(defaults);
    } catch {
      return true;
    }
  });
  assert.deepEqual(differing, []);
});

test('events are kept at least 30 days: EVENTS_RETENTION_DAYS below 30 is refused, 30 and more are taken', () => {
  assert.throws(() => loadConfig({ EVENTS_RETENTION_DAYS: '29' }), (error: unknown) => error instanceof ConfigError
    && error.message === 'invalid configuration:\n  - EVENTS_RETENTION_DAYS must be a whole number from 30 to 3650, got "29"');
  assert.deepEqual([loadConfig({}).eventsRetentionDays, loadConfig({ EVENTS_RETENTION_DAYS: '30' }).eventsRetentionDays,
    loadConfig({ EVENTS_RETENTION_DAYS: '400' }).eventsRetentionDays], [30, 30, 400]);
});
