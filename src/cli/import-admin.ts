import type { Kysely } from 'kysely';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { acquireDataDirLock, DataDirLockedError } from '../db/data-dir-lock.ts';
import { migrate } from '../db/migrate.ts';
import type { Database } from '../db/schema.ts';
import { openStore } from '../db/store.ts';
import { AppError } from '../core/errors.ts';
import { CliError, messageOf } from './cli-error.ts';
import { report, runAdminCommand, wantsJson, type AdminOutput, type AdminStore } from './admin-runner.ts';
import { adminSocketPath, sendToAdminSocket } from './admin-socket.ts';

// import-admin as the bin runs it: finds the store the server uses (DATABASE_URL, or the embedded one
// in DATA_DIR) and runs the command there. A server that holds the embedded store runs the command
// itself, sent through its admin socket, and its output is printed as it is; otherwise the CLI opens
// the store (locking DATA_DIR as the server does) for the one command.
export interface CliIo extends AdminOutput {
  env: Record<string, string | undefined>;
}

export async function runImportAdmin(argv: string[], io: CliIo): Promise<number> {
  const config = configOf(io.env);
  if (!(config instanceof CliError) && !config.databaseUrl) {
    try {
      const reply = await sendToAdminSocket(adminSocketPath(config.dataDir), { argv, json: wantsJson(argv) });
      if (reply) {
        if (reply.stdout) io.out(reply.stdout);
        if (reply.stderr) io.err(reply.stderr);
        return reply.status;
      }
    } catch (error) {
      return report(error, wantsJson(argv), io);
    }
  }
  return runAdminCommand(argv, ownStore(config), io);
}

/** The configuration, or the CliError that reports it (once the command line is known to be good). */
function configOf(env: CliIo['env']): Config | CliError {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return new CliError('invalid_configuration', `invalid configuration: ${error.problems.join('; ')}`);
    throw error;
  }
}

function ownStore(config: Config | CliError): AdminStore {
  return {
    async use(work) {
      if (config instanceof CliError) throw config;
      try {
        return await withStore(config, work);
      } catch (error) {
        if (error instanceof CliError || error instanceof AppError) throw error;
        if (error instanceof DataDirLockedError) throw new CliError('store_in_use', error.message);
        throw describeUnexpected(error, config);
      }
    },
  };
}

async function withStore<T>(config: Config, work: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  // The embedded store belongs to one process: refuse while another holds it, and hold it meanwhile.
  const lock = config.databaseUrl ? undefined : acquireDataDirLock(config.dataDir, 'import-admin');
  try {
    const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    try {
      await migrate(store);
      return await work(store.db);
    } finally {
      await store.close();
    }
  } finally {
    lock?.release();
  }
}

function describeUnexpected(error: unknown, config: Config): CliError {
  const code = (error as { code?: unknown }).code;
  if (config.databaseUrl && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '3D000' || code === '28P01')) {
    return new CliError('store_unavailable', `cannot use the database at DATABASE_URL: ${messageOf(error)}`);
  }
  return new CliError('internal_error', `unexpected failure: ${messageOf(error)}`);
}
