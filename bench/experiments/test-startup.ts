// What a test file pays before its first test, stage by stage, as test/support/test-app.ts builds
// its app: importing the app, reading the PGlite template, opening the in-memory store from it,
// migrating, composing the modules and building the app. Run it as its own process, a few times:
// the first stages are a cold process's.
//
// Usage: node --import tsx bench/experiments/test-startup.ts

const times: Record<string, number> = { 'node and tsx': Math.round(performance.now()) };
let last = performance.now();
const mark = (stage: string) => {
  const now = performance.now();
  times[stage] = Math.round(now - last);
  last = now;
};
const { buildApp } = await import('../../src/app.ts');
mark('import the app');
const { loadConfig } = await import('../../src/config.ts');
const { migrate } = await import('../../src/db/migrate.ts');
const { openStore } = await import('../../src/db/store.ts');
const { composeModules } = await import('../../src/composition.ts');
const { createTestClock } = await import('../../src/core/clock.ts');
const { pgliteTemplate } = await import('../../test/support/pglite-template.ts');
mark('import the rest');
const config = loadConfig({ DEMO_SEED: 'false', DATABASE_URL: '' });
const initialData = await pgliteTemplate();
mark('read the template');
const store = await openStore({ dataDir: 'memory://', initialData, poolSize: 50 });
mark('open the store');
await migrate(store);
mark('migrate');
const quiet = { info() {}, warn() {}, error() {} };
const modules = await composeModules({ config, store, logger: quiet, clock: createTestClock() });
mark('compose the modules');
const app = await buildApp({ modules });
await app.ready();
mark('build the app');
await app.close();
await modules.stop(1000);
await store.close();
const cpu = process.cpuUsage();
console.log(Object.entries(times).map(([stage, ms]) => `${stage} ${ms} ms`).join(', ')
  + `; CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms (${(cpu.system / 1000).toFixed(0)} of it system)`);
