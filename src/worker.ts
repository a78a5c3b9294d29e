import closeWithGrace from 'close-with-grace';
import { createLogger } from './logger.ts';
import { configOrExit, exitWith } from './exit.ts';
import { migrate } from './db/migrate.ts';
import { openStore, sessionLimitsOf } from './db/store.ts';
import { composeModules } from './composition.ts';
import { startWorkers } from './workers.ts';

// `npm run worker`: the workers of `npm start` without the HTTP server, for deployments that run
// them apart. It needs PostgreSQL (the embedded store belongs to one process: the server's).
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger(config);
  if (!config.databaseUrl) exitWith('cannot start: npm run worker needs DATABASE_URL (the embedded store belongs to the server process)');
  if (config.workerConcurrency === 0) exitWith('cannot start: WORKER_CONCURRENCY is 0, so there would be nothing to run');

  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, sessionLimits: sessionLimitsOf(config) });
  const applied = await migrate(store);
  // The same modules as `npm start` builds (composition.ts), without the HTTP app.
  const modules = await composeModules({ config, store, logger });
  const workers = await startWorkers(modules, logger);
  logger.info({ store: store.kind, applied, worker_concurrency: config.workerConcurrency }, 'workers started');

  closeWithGrace({ delay: config.shutdownTimeoutMs, logger }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    await workers.stop();
    await modules.stop(config.shutdownTimeoutMs);
    await store.close();
    logger.info({}, 'workers stopped');
  });
}

await main();
