import closeWithGrace from 'close-with-grace';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from './app.ts';
import type { Readiness } from './http/shutdown.ts';
import { createLogger } from './logger.ts';
import { configOrExit, exitWith } from './exit.ts';
import { acquireDataDirLock, DataDirLockedError, type DataDirLock } from './db/data-dir-lock.ts';
import { migrate } from './db/migrate.ts';
import { openStore, sessionLimitsOf } from './db/store.ts';
import { demoBanner, demoKeyFileInUse, seedDemo, writeDemoKeyFile } from './modules/admin/index.ts';
import { composeModules } from './composition.ts';
import { startWorkers } from './workers.ts';
import { serveAdminSocket, type AdminSocketServer } from './cli/admin-socket.ts';

// config → logger → store → migrate → app → listen; graceful shutdown on SIGTERM/SIGINT.
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger(config);

  // The embedded store belongs to one process (D2): a second server, or import-admin, must not open it.
  let lock: DataDirLock | undefined;
  if (!config.databaseUrl) lock = await lockDataDir(config.dataDir, logger);

  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, sessionLimits: sessionLimitsOf(config) });
  const applied = await migrate(store);
  logger.info({ store: store.kind, applied }, 'store ready');
  // First run: the demo key goes to a file before anything else can fail (docs/operations.md#first-run).
  const seed = config.demoSeed ? await seedDemo(store.db) : null;
  let keyFile: string | null = null;
  if (seed) {
    try {
      keyFile = writeDemoKeyFile(config.dataDir, seed.apiKey);
    } catch (error) {
      logger.warn({ err: error, data_dir: config.dataDir }, 'the demo API key could not be saved to a file; it is printed once listening');
    }
    logger.info({ organisation: seed.organisation, supplier: seed.supplier, team: seed.team, key_file: keyFile }, 'demo data created');
  } else if (config.demoSeed) {
    keyFile = await demoKeyFileInUse(store.db, config.dataDir);
  }
  // Every module built once, on the system clock (composition.ts); the app and the workers share them.
  const modules = await composeModules({ config, store, logger });
  const readiness: Readiness = { draining: false };
  const app = await buildApp({ modules, logger, readiness });
  const workers = await startWorkers(modules, logger);
  // import-admin beside this server: the embedded store serves this process only, so the CLI's
  // commands come here through DATA_DIR/admin.sock and run on this store (docs/operations.md).
  let adminSocket: AdminSocketServer | undefined;
  if (!config.databaseUrl) {
    try {
      // After each command the directory is synced (a key revoked there is refused by the next request).
      adminSocket = await serveAdminSocket(config.dataDir, {
        db: store.db,
        settle: () => modules.directory.sync(),
      });
      logger.info({ path: adminSocket.path }, 'import-admin socket ready');
    } catch (error) {
      logger.warn({ err: error, data_dir: config.dataDir }, 'the import-admin socket could not be opened; import-admin refuses while this server runs');
    }
  }

  // Stop accepting, let in-flight requests finish, then close the store: a create runs in one
  // transaction, so one cut short by the delay is rolled back, never half-written.
  // Workers stop taking jobs and finish the ones in hand (a job cut short runs again elsewhere).
  const stop = async () => {
    await Promise.all([app.close(), workers.stop(), adminSocket?.close()]);
    await modules.stop(config.shutdownTimeoutMs);
    await store.close();
    lock?.release();
  };
  const grace = closeWithGrace({ delay: config.shutdownDrainMs + config.shutdownTimeoutMs, logger }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'shutting down after an error');
    else logger.info({ signal }, 'shutting down');
    readiness.draining = true;
    // SIGTERM is how an orchestrator stops an instance: keep serving while /readyz says 503, so the
    // load balancer stops sending before the port closes. SIGINT (Ctrl-C at a terminal) skips it.
    if (signal === 'SIGTERM' && config.shutdownDrainMs > 0) {
      logger.info({ drain_ms: config.shutdownDrainMs }, 'draining: /readyz answers 503, requests are still served');
      await sleep(config.shutdownDrainMs);
    }
    await stop();
    logger.info({}, 'stopped');
  });

  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    grace.uninstall();
    await stop();
    const reason = (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
      ? `port ${config.port} on ${config.host} is already in use (set PORT to a free port)`
      : `could not listen on ${config.host}:${config.port}: ${(error as Error).message}`;
    exitWith(`cannot start: ${reason}${keyFile ? `; the demo API key is saved in ${keyFile}` : ''}`);
  }
  const baseUrl = baseUrlOf(app.server.address() as AddressInfo);
  if (seed) process.stdout.write(demoBanner(seed, baseUrl, keyFile));
  else if (keyFile) process.stdout.write(`Demo organisation "demo" from an earlier start: its API key is in ${keyFile}\n`);
}

// The address to paste into curl: a wildcard bind is reached on the loopback address.
function baseUrlOf(address: AddressInfo): string {
  const host = ['0.0.0.0', '::', ''].includes(address.address) ? '127.0.0.1'
    : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/** How long a starting server waits for an import-admin command that holds the embedded store (one takes seconds). */
const IMPORT_ADMIN_WAIT_MS = 30_000;

/**
 * The embedded store's lock. Held by another server: that is an error at once. Held by an
 * import-admin command run without a server: it is done in seconds, so the start waits for it
 * (up to IMPORT_ADMIN_WAIT_MS) rather than failing because a command happened to be running.
 */
async function lockDataDir(dataDir: string, logger: ReturnType<typeof createLogger>): Promise<DataDirLock> {
  const deadline = Date.now() + IMPORT_ADMIN_WAIT_MS;
  for (let said = false; ; said = true) {
    try {
      return acquireDataDirLock(dataDir, 'server');
    } catch (error) {
      if (!(error instanceof DataDirLockedError)) throw error;
      if (error.holder.role !== 'import-admin' || Date.now() >= deadline) exitWith(`cannot start: ${error.message}`);
      if (!said) logger.info({ pid: error.holder.pid, data_dir: dataDir }, 'waiting for an import-admin command to finish with the embedded store');
    }
    await sleep(200);
  }
}

await main();
