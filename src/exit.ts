import { ConfigError, loadConfig, type Config } from './config.ts';

// What the two entry points (main.ts, worker.ts) do when they cannot start: one line on stderr and
// an exit status, never a stack trace. A configuration problem is a usage error (2).

export function exitWith(reason: string, status = 1): never {
  process.stderr.write(`${reason}\n`);
  process.exit(status);
}

export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) exitWith(error.message, 2);
    throw error;
  }
}
