import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import { AppError } from '../core/errors.ts';
import type { Database } from '../db/schema.ts';
import { CliError, cliFailure, messageOf, type CliErrorCode } from './cli-error.ts';
import { COMMANDS, synopsis, type Command, type Flags } from './commands.ts';

// One import-admin command run, from its command line to its exit status: parse, check, run one
// admin service call against a store, print a sentence or a table (or with --json exactly one JSON
// object). Every failure becomes a CliError (cli-error.ts), printed in one place (`report`) with the
// exit status its code decides. The CLI runs it on the store it opens itself; a server holding the embedded store
// runs the very same function on its own store for a CLI that reaches it through its admin socket,
// so both ways print the same thing.
export interface AdminOutput {
  out(text: string): void;
  err(text: string): void;
}

/**
 * Where a command's work runs. `use` is called once the command line is known to be good, and may
 * refuse with a CliError (a bad configuration, a store that cannot be opened).
 */
export interface AdminStore {
  use<T>(work: (db: Kysely<Database>) => Promise<T>): Promise<T>;
}

const EXIT_OK = 0;
const EXIT_REFUSED = 1;
const EXIT_USAGE = 2;

const COMMON_OPTIONS = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
const COMMON_FLAGS = new Set(['--json', '--help', '-h']);

export const wantsJson = (argv: readonly string[]): boolean => argv.includes('--json');

export async function runAdminCommand(argv: string[], store: AdminStore, io: AdminOutput): Promise<number> {
  const json = wantsJson(argv);
  try {
    const result = await execute(argv, store);
    io.out(json ? `${JSON.stringify(result.json)}\n` : `${result.text}\n`);
    return EXIT_OK;
  } catch (error) {
    return report(error, json, io);
  }
}

/** The one place a failure is printed: `{"error": {"code", "message"}}` on stdout with --json, else one line on stderr. */
export function report(error: unknown, json: boolean, io: AdminOutput): number {
  const failure = cliFailure(error);
  const message = failure.message.replace(/\s*\n\s*/g, '; ');
  if (json) io.out(`${JSON.stringify({ error: { code: failure.code, message } })}\n`);
  else io.err(`import-admin: ${message}\n`);
  return exitStatusFor(failure.code);
}

/** 2: the command line (or the configuration) is wrong and nothing was tried; 1: the operation was refused or failed. */
function exitStatusFor(code: CliErrorCode): number {
  switch (code) {
    case 'unknown_command':
    case 'missing_argument':
    case 'unexpected_argument':
    case 'invalid_argument':
    case 'invalid_configuration':
      return EXIT_USAGE;
    case 'not_found':
    case 'already_exists':
    case 'conflict':
    case 'store_in_use':
    case 'store_unavailable':
    case 'internal_error':
      return EXIT_REFUSED;
  }
}

async function execute(argv: string[], store: AdminStore): Promise<{ json: unknown; text: string }> {
  // The command is the first two words, `supplier create …`; --json and --help may come before them.
  const leading = argv.findIndex((a) => !COMMON_FLAGS.has(a));
  const start = leading < 0 ? argv.length : leading;
  const command = COMMANDS.find((c) => argv.slice(start, start + 2).join(' ') === c.name);
  if (argv.includes('--help') || argv.includes('-h') || argv[start] === 'help') {
    const text = command ? commandUsage(command) : usage();
    return { json: { usage: text }, text: text.replace(/\n$/, '') };
  }
  if (!command) {
    const given = argv.slice(start, start + 2).filter((a) => !a.startsWith('-')).join(' ');
    // A group's name alone, or with a word it has no command for: name the commands it has.
    const group = COMMANDS.filter((c) => c.name.split(' ')[0] === argv[start]).map((c) => c.name);
    if (group.length > 0) {
      throw new CliError('unknown_command', `${given === argv[start] ? `"${given}" needs a command` : `unknown command "${given}"`}: `
        + `${group.join(', ')}; run import-admin --help`);
    }
    throw given
      ? new CliError('unknown_command', `unknown command "${given}"; run import-admin --help`)
      : new CliError('missing_argument', 'no command given; run import-admin --help');
  }

  let args: string[];
  let flags: Flags;
  try {
    ({ args, flags } = parseCommandLine(command, [...argv.slice(0, start), ...argv.slice(start + 2)]));
    // The values given are checked before the flags missing: `--kind ftp` is the first thing to fix.
    await command.check?.(flags);
    requireFlags(command, flags);
  } catch (error) {
    if (!(error instanceof CliError || error instanceof AppError)) throw error;
    const failure = cliFailure(error);
    throw new CliError(failure.code, `${failure.message}; usage: import-admin ${synopsis(command)}`);
  }

  const result = await store.use((db) => command.run(db, args, flags));
  return { json: result, text: command.text(result as Record<string, unknown>) };
}

function parseCommandLine(command: Command, rest: string[]): { args: string[]; flags: Flags } {
  const options = Object.fromEntries(Object.entries(command.options).map(([name, spec]) => [name, { type: spec.type }]));
  let parsed;
  try {
    parsed = parseArgs({ args: rest, options: { ...options, ...COMMON_OPTIONS }, allowPositionals: true, strict: true });
  } catch (error) {
    // parseArgs explains itself well, over several sentences; the first is the reason.
    throw new CliError('invalid_argument', messageOf(error).split('. ')[0]!.replace(/\.$/, ''));
  }
  const args = parsed.positionals;
  if (args.length < command.args.length) throw new CliError('missing_argument', `missing ${command.args.slice(args.length).join(' ')}`);
  if (args.length > command.args.length) throw new CliError('unexpected_argument', `unexpected argument "${args[command.args.length]}"`);
  return { args, flags: parsed.values as Flags };
}

function requireFlags(command: Command, flags: Flags): void {
  for (const [name, spec] of Object.entries(command.options)) {
    if (spec.required && flags[name] === undefined) throw new CliError('missing_argument', `--${name} is required`);
  }
}

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => [c.name, ...c.args].join(' ').length)) + 2;
  return [
    'import-admin: set up and inspect the account migration import service: organisations and their API keys,',
    'import suppliers, operations teams, payment vendors and webhooks.',
    '',
    'Usage: npx import-admin <command> [options] [--json]',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${[c.name, ...c.args].join(' ').padEnd(width)}${c.summary}`),
    '',
    'Options:',
    ...COMMANDS.filter((c) => Object.keys(c.options).length > 0).map((c) => `  import-admin ${synopsis(c)}`),
    '  --json       print exactly one JSON object on stdout, also for a failure: {"error": {"code": "...", "message": "..."}}',
    '  --help, -h   show this help (with a command: that command\'s usage)',
    '',
    'Store: DATABASE_URL (PostgreSQL), or the embedded store in DATA_DIR (default ./data), as the server uses.',
    'While a server runs on the embedded store, the command is run by that server (through DATA_DIR/admin.sock)',
    'and prints the same; with PostgreSQL it opens the database itself, beside running servers.',
    '',
    'Exit status: 0 done; 1 refused or failed (not found, already exists, conflict, store unavailable);',
    '2 the command line or the configuration is wrong (nothing was tried).',
    'A failure is one line on stderr, or with --json the error object on stdout.',
    '',
  ].join('\n');
}

function commandUsage(command: Command): string {
  return `Usage: import-admin ${synopsis(command)}\n\n${command.summary}.\n`;
}
