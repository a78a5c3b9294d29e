import closeWithGrace from 'close-with-grace';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { acquireDataDirLock, DataDirLockedError, type DataDirLock } from './db/data-dir-lock.ts';
import { migrate } from './db/migrate.ts';
import { openStore } from './db/store.ts';
import { demoBanner, seedDemo } from './modules/admin/demo-seed.ts';
import { createTokenService } from './modules/auth/token.service.ts';
import { startOutboxSender } from './modules/email/outbox.sender.ts';

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

  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const applied = await migrate(store);
  logger.info({ store: store.kind, applied }, 'store ready');
  const seed = config.demoSeed ? await seedDemo(store.db) : null;
  if (seed) logger.info({ organisation: seed.organisation, supplier: seed.supplier, team: seed.team }, 'demo data created');
  const tokens = await createTokenService(store.db, config);
  const app = await buildApp({ config, store, tokens, logger });
  const outbox = startOutboxSender({ db: store.db, config, logger });

  closeWithGrace({ delay: config.shutdownTimeoutMs, logger }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    // Stop accepting, let in-flight requests finish, then close the store: a create runs in one
    // transaction, so one cut short by the delay is rolled back, never half-written.
    await app.close();
    await outbox.stop();
    await store.close();
    lock?.release();
  });

  await app.listen({ host: config.host, port: config.port });
  if (seed) process.stdout.write(demoBanner(seed, baseUrlOf(app.server.address() as AddressInfo)));
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) exitWith(error.message, 2);
    throw error;
  }
}

function exitWith(reason: string, status = 1): never {
  process.stderr.write(`${reason}\n`);
  process.exit(status);
}

// The address to paste into curl: a wildcard bind is reached on the loopback address.
function baseUrlOf(address: AddressInfo): string {
  const host = ['0.0.0.0', '::', ''].includes(address.address) ? '127.0.0.1'
    : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

await main();
