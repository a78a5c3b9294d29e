import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { migrate } from './db/migrate.ts';
import { openStore } from './db/store.ts';
import { createTokenService } from './modules/auth/token.service.ts';
import { startOutboxSender } from './modules/email/outbox.sender.ts';

// config → logger → store → migrate → app → listen; graceful shutdown on SIGTERM/SIGINT.
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = pino({ level: config.logLevel });
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const applied = await migrate(store);
  logger.info({ store: store.kind, applied }, 'store ready');
  const tokens = await createTokenService(store.db, config);
  const app = await buildApp({ config, store, tokens, logger });
  const outbox = startOutboxSender({ db: store.db, config, logger });

  closeWithGrace({ delay: config.shutdownTimeoutMs }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    // Stop accepting, let in-flight requests finish, then close the store: a create runs in one
    // transaction, so one cut short by the delay is rolled back, never half-written.
    await app.close();
    await outbox.stop();
    await store.close();
  });

  await app.listen({ host: config.host, port: config.port });
}

await main();
