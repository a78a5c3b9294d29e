import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { acquireDataDirLock, DataDirLockedError } from '../db/data-dir-lock.ts';
import { migrate } from '../db/migrate.ts';
import { openStore } from '../db/store.ts';
import { AdminError } from '../modules/admin/admin.service.ts';
import { COMMANDS, synopsis, UsageError, type Command, type Flags } from './commands.ts';

// import-admin (D2): parses the command line, opens the same store as the server (DATABASE_URL, or
// the embedded one in DATA_DIR, which it locks like the server does), runs one admin service call
// and prints the result: a sentence, or with --json exactly one JSON object. Any failure is one
// line on stderr and a non-zero status: 1 when the operation failed, 2 when the command line is wrong.
export interface CliIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

const COMMON_OPTIONS = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
const COMMON_FLAGS = new Set(['--json', '--help', '-h']);

export async function runImportAdmin(argv: string[], io: CliIo): Promise<number> {
  const json = argv.includes('--json');
  const fail = (status: number, reason: string): number => {
    io.err(`import-admin: ${reason.replace(/\s*\n\s*/g, '; ')}\n`);
    return status;
  };

  // The command is the first two words, `supplier create …`; --json and --help may come before them.
  const leading = argv.findIndex((a) => !COMMON_FLAGS.has(a));
  const start = leading < 0 ? argv.length : leading;
  const command = COMMANDS.find((c) => argv.slice(start, start + 2).join(' ') === c.name);
  if (argv.includes('--help') || argv.includes('-h') || argv[start] === 'help') {
    const text = command ? commandUsage(command) : usage();
    io.out(json ? `${JSON.stringify({ usage: text })}\n` : text);
    return EXIT_OK;
  }
  if (!command) {
    const given = argv.slice(start, start + 2).filter((a) => !a.startsWith('-')).join(' ');
    return fail(EXIT_USAGE, given ? `unknown command "${given}"; run import-admin --help` : 'no command given; run import-admin --help');
  }

  let args: string[];
  let flags: Flags;
  try {
    ({ args, flags } = parseCommandLine(command, [...argv.slice(0, start), ...argv.slice(start + 2)]));
    command.check?.(flags);
  } catch (error) {
    return fail(EXIT_USAGE, `${(error as Error).message}; usage: import-admin ${synopsis(command)}`);
  }

  let config: Config;
  try {
    config = loadConfig(io.env);
  } catch (error) {
    if (error instanceof ConfigError) return fail(EXIT_FAILED, `invalid configuration: ${error.problems.join('; ')}`);
    throw error;
  }

  try {
    const result = await withStore(config, (db) => command.run(db, args, flags));
    io.out(json ? `${JSON.stringify(result)}\n` : `${command.text(result as Record<string, unknown>)}\n`);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof AdminError || error instanceof DataDirLockedError) return fail(EXIT_FAILED, error.message);
    return fail(EXIT_FAILED, describeUnexpected(error, config));
  }
}

function parseCommandLine(command: Command, rest: string[]): { args: string[]; flags: Flags } {
  const options = Object.fromEntries(Object.entries(command.options).map(([name, spec]) => [name, { type: spec.type }]));
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...options, ...COMMON_OPTIONS }, allowPositionals: true, strict: true });
  } catch (error) {
    // parseArgs explains itself well, over several sentences; the first is the reason.
    throw new UsageError((error as Error).message.split('. ')[0]!.replace(/\.$/, ''));
  }
  const args = parsed.positionals;
  if (args.length !== command.args.length) {
    throw new UsageError(args.length < command.args.length
      ? `missing ${command.args.slice(args.length).join(' ')}`
      : `unexpected argument "${args[command.args.length]}"`);
  }
  for (const [name, spec] of Object.entries(command.options)) {
    if (spec.required && (parsed.values as Flags)[name] === undefined) throw new UsageError(`--${name} is required`);
  }
  return { args, flags: parsed.values as Flags };
}

async function withStore<T>(config: Config, work: (db: Awaited<ReturnType<typeof openStore>>['db']) => Promise<T>): Promise<T> {
  // The embedded store belongs to one process: refuse while a server holds it, and hold it meanwhile.
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

function describeUnexpected(error: unknown, config: Config): string {
  const code = (error as { code?: unknown }).code;
  if (config.databaseUrl && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '3D000' || code === '28P01')) {
    return `cannot use the database at DATABASE_URL: ${(error as Error).message}`;
  }
  return `unexpected failure: ${error instanceof Error ? error.message : String(error)}`;
}

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => [c.name, ...c.args].join(' ').length)) + 2;
  return [
    'import-admin: configure the account migration import service (D2).',
    '',
    'Usage: npx import-admin <command> [options] [--json]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${[c.name, ...c.args].join(' ').padEnd(width)}${c.summary}`),
    '',
    'Flags:',
    ...COMMANDS.filter((c) => Object.keys(c.options).length > 0).map((c) => `  import-admin ${synopsis(c)}`),
    '  --json       print exactly one JSON object on stdout',
    '  --help, -h   show this help (with a command: that command\'s usage)',
    '',
    'Store: DATABASE_URL (PostgreSQL), or the embedded store in DATA_DIR (default ./data), as the server uses.',
    'The embedded store serves one process at a time: stop the server first, or use PostgreSQL.',
    'Exit status: 0 done; 1 the operation failed; 2 the command line is wrong. The reason is one line on stderr.',
    '',
  ].join('\n');
}

function commandUsage(command: Command): string {
  return `Usage: import-admin ${synopsis(command)}\n\n${command.summary}.\n`;
}
