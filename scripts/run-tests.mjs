#!/usr/bin/env node
// Runs node's test runner over an explicit list of *.test.ts files (on Node 20, `node --test DIR`
// finds no .ts files and passes with zero tests). Fails when a run executes no test at all.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const dirs = process.argv.slice(2);
const files = [];
const walk = (dir) => {
  if (!statSync(dir).isDirectory()) return void files.push(dir);
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.test.ts')) files.push(path);
  }
};
dirs.forEach(walk);
if (files.length === 0) {
  console.error(`no test files under ${dirs.join(', ')}`);
  process.exit(1);
}

const concurrency = process.env.TEST_CONCURRENCY ?? '2';
const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: process.env,
});
// The runner's closing lines ("ℹ pass N" …): the last value seen of each wins.
const totals = {};
let partial = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  const lines = (partial + chunk.toString()).split('\n');
  partial = lines.pop() ?? '';
  for (const line of lines) {
    const match = /^ℹ (tests|pass|fail) (\d+)$/.exec(line.trim());
    if (match) totals[match[1]] = Number(match[2]);
  }
});
child.on('close', (code) => {
  const count = (label) => totals[label] ?? 0;
  const passed = count('pass');
  const failed = count('fail');
  const store = process.env.DATABASE_URL ? 'postgresql' : 'pglite';
  console.log(`${store}: ${passed} passed, ${failed} failed`);
  if (count('tests') === 0) {
    console.error('no test was executed');
    process.exit(1);
  }
  process.exit(code ?? 1);
});
