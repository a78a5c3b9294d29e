import closeWithGrace from 'close-with-grace';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { configOrExit, exitWith } from './exit.ts';
import { acquireDataDirLock, DataDirLockedError, type DataDirLock } from './db/data-dir-lock.ts';
import { migrate } from './db/migrate.ts';
import { openStore, sessionLimitsOf } from './db/store.ts';
import { demoBanner, seedDemo } from './modules/admin/demo-seed.ts';
import { createTokenService } from './modules/auth/token.service.ts';
import { openQueue, startWorkers } from './workers.ts';

// config → logger → store → migrate → app → listen; graceful shutdown on SIGTERM/SIGINT.
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = pino({ level: config.logLevel });

  // The embedded store belongs to one process (D2): a second server, or import-admin, must not open it.
  let lock: DataDirLock | undefined;
  if (!config.databaseUrl) {
    try {
      lock = acquireDataDirLock(config.dataDir, 'server');
    } catch (error) {
      if (error instanceof DataDirLockedError) exitWith(`cannot start: ${error.message}`);
      throw error;
    }
  }

  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, sessionLimits: sessionLimitsOf(config) });
  const applied = await migrate(store);
  logger.info({ store: store.kind, applied }, 'store ready');
  const seed = config.demoSeed ? await seedDemo(store.db) : null;
  if (seed) logger.info({ organisation: seed.organisation, supplier: seed.supplier, team: seed.team }, 'demo data created');
  const tokens = await createTokenService(store.db, config);
  const queue = await openQueue(store, logger, config);
  const app = await buildApp({ config, store, tokens, queue, logger });
  const workers = await startWorkers({ store, queue, config, logger });

  closeWithGrace({ delay: config.shutdownTimeoutMs, logger }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    // Stop accepting, let in-flight requests finish, then close the store: a create runs in one
    // transaction, so one cut short by the delay is rolled back, never half-written.
    // Workers stop taking jobs and finish the ones in hand (a job cut short runs again elsewhere).
    await Promise.all([app.close(), workers.stop()]);
    await queue.stop(config.shutdownTimeoutMs);
    await store.close();
    lock?.release();
  });

  await app.listen({ host: config.host, port: config.port });
  if (seed) process.stdout.write(demoBanner(seed, baseUrlOf(app.server.address() as AddressInfo)));
}

// The address to paste into curl: a wildcard bind is reached on the loopback address.
function baseUrlOf(address: AddressInfo): string {
  const host = ['0.0.0.0', '::', ''].includes(address.address) ? '127.0.0.1'
    : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

await main();
