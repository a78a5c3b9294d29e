import { constants } from 'node:fs';
import { access, open, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { ApiError, ApiSession, isUnavailable, UnreachableError } from './api-session.ts';
import type { CommandContext, CommandResult, Flags } from './command-context.ts';
import { CONVERT_SYNOPSIS, convertCommand } from './convert/convert-command.ts';
import { cancelCommand, jobsCommand, pauseCommand, resultsCommand, resumeCommand, retryCommand, statusCommand } from './job-commands.ts';
import { plainProgress, terminalProgress } from './progress.ts';
import { reconcileCommand } from './reconcile-command.ts';
import { maxRate, runFile, watchCommand } from './run-command.ts';
import { FileReadError, holdsRecord } from './upload.ts';

// import-migrate (D12): the supplier's migration client. It talks to the service over HTTP only.
// Exit status: 0 every record succeeded or was skipped (or the command did what it said); 1 a record
// failed or the service refused; 2 the command line (or FILE) is wrong or the service cannot be reached
// or used (isUnavailable after the retries); 130 Ctrl-C (the job goes on). Reasons go to stderr as one line; stdout has the result only.
export interface MigrateIo {
  env: Record<string, string | undefined>;
  out(text: string): void;
  err(text: string): void;
  /** stderr when it is a terminal (progress bars), otherwise null (plain progress lines). */
  tty: NodeJS.WriteStream | null;
  stdout: NodeJS.WritableStream;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

interface CommandSpec { args: string[]; options: string[]; synopsis: string; run(ctx: CommandContext, args: string[]): Promise<CommandResult> }

const COMMANDS: Record<string, CommandSpec> = {
  run: {
    args: ['FILE'], options: ['supplier', 'team', 'dry-run', 'on-drift', 'not-before', 'not-after', 'max-rate', 'control-totals', 'resume'],
    synopsis: 'run FILE --supplier CODE --team NAME [--dry-run] [--on-drift warn|fail] [--not-before T] [--not-after T] [--max-rate N] [--control-totals TOTALS.json]\n  import-migrate run FILE --resume JOB',
    run: (ctx, [file]) => runFile(ctx, file!),
  },
  watch: { args: ['JOB'], options: [], synopsis: 'watch JOB', run: (ctx, [job]) => watchCommand(ctx, job!) },
  status: { args: ['JOB'], options: [], synopsis: 'status JOB', run: (ctx, [job]) => statusCommand(ctx, job!) },
  results: { args: ['JOB'], options: ['outcome', 'csv'], synopsis: 'results JOB [--outcome O] [--csv]', run: (ctx, [job]) => resultsCommand(ctx, job!) },
  cancel: { args: ['JOB'], options: [], synopsis: 'cancel JOB', run: (ctx, [job]) => cancelCommand(ctx, job!) },
  retry: { args: ['JOB'], options: [], synopsis: 'retry JOB', run: (ctx, [job]) => retryCommand(ctx, job!) },
  pause: { args: ['JOB'], options: [], synopsis: 'pause JOB', run: (ctx, [job]) => pauseCommand(ctx, job!) },
  resume: { args: ['JOB'], options: [], synopsis: 'resume JOB', run: (ctx, [job]) => resumeCommand(ctx, job!) },
  jobs: { args: [], options: ['supplier'], synopsis: 'jobs --supplier CODE', run: (ctx) => jobsCommand(ctx) },
  reconcile: { args: ['JOB'], options: ['csv'], synopsis: 'reconcile JOB [--csv FILE]', run: (ctx, [job]) => reconcileCommand(ctx, job!) },
};

const OPTIONS = {
  url: { type: 'string' }, 'api-key': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
  supplier: { type: 'string' }, team: { type: 'string' }, 'dry-run': { type: 'boolean' }, 'on-drift': { type: 'string' }, 'not-before': { type: 'string' },
  'not-after': { type: 'string' }, 'max-rate': { type: 'string' }, 'control-totals': { type: 'string' }, resume: { type: 'string' }, outcome: { type: 'string' }, csv: { type: 'boolean' },
  mapping: { type: 'string' }, out: { type: 'string' }, init: { type: 'boolean' },
} as const;
/** reconcile's --csv names the file the exceptions go to; results' --csv is a switch. */
const RECONCILE_OPTIONS = { ...OPTIONS, csv: { type: 'string' } } as const;
/** convert works offline: it takes no service option, and only these. */
const CONVERT_OPTIONS = new Set(['mapping', 'out', 'init', 'json', 'help']);
const GLOBAL_OPTIONS = new Set(['url', 'api-key', 'json', 'help']);
const OUTCOMES = ['pending', 'running', 'succeeded', 'skipped', 'failed', 'cancelled'];
const UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

export const DEFAULT_URL = 'http://127.0.0.1:8000';

class UsageError extends Error {}

export async function runImportMigrate(argv: string[], io: MigrateIo): Promise<number> {
  const fail = (status: number, reason: string): number => {
    io.err(`import-migrate: ${reason.replace(/\s*\n\s*/g, '; ')}\n`);
    return status;
  };
  let parsed: { values: Flags; positionals: string[] };
  try {
    // The command decides what --csv takes; a first, lenient pass finds the command.
    const named = parseArgs({ args: argv, options: RECONCILE_OPTIONS, allowPositionals: true, strict: false }).positionals[0];
    const options = named === 'reconcile' ? RECONCILE_OPTIONS : OPTIONS;
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (error) {
    return fail(EXIT_USAGE, `${(error as Error).message.split('. ')[0]!.replace(/\.$/, '')}; run import-migrate --help`);
  }
  const { values: flags, positionals } = parsed;
  if (flags.help || positionals[0] === 'help') {
    io.out(usage());
    return EXIT_OK;
  }
  const name = positionals[0];
  if (name === 'convert') {
    const stray = Object.keys(flags).find((option) => !CONVERT_OPTIONS.has(option));
    if (stray) return fail(EXIT_USAGE, `--${stray} does not apply to convert; usage: import-migrate ${CONVERT_SYNOPSIS}`);
    return convertCommand(flags, positionals.slice(1), io);
  }
  const command = name ? COMMANDS[name] : undefined;
  if (!command) return fail(EXIT_USAGE, name ? `unknown command "${name}"; run import-migrate --help` : 'no command given; run import-migrate --help');

  const apiKey = (flags['api-key'] as string | undefined) ?? io.env.IMPORT_API_KEY;
  const baseUrl = (flags.url as string | undefined) ?? (io.env.IMPORT_URL || DEFAULT_URL);
  let totals: Record<string, unknown> | null = null;
  try {
    checkCommandLine(name!, command, positionals.slice(1), flags);
    if (!apiKey) throw new UsageError('give --api-key KEY or set IMPORT_API_KEY');
    if (!/^https?:\/\/[^/]+/.test(baseUrl)) throw new UsageError(`--url must be an http(s) URL, got "${baseUrl}"`);
    if (name === 'run') await checkFile(positionals[1]!);
    if (name === 'reconcile' && typeof flags.csv === 'string') await checkWritable(flags.csv);
    if (flags['control-totals'] !== undefined) totals = await controlTotals(flags['control-totals'] as string);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return fail(EXIT_USAGE, `${error.message}; usage: import-migrate ${command.synopsis}`);
  }

  const session = new ApiSession(baseUrl.replace(/\/+$/, ''), apiKey, {
    attempts: 5, baseDelayMs: positiveInt(io.env.IMPORT_MIGRATE_RETRY_DELAY_MS, 500),
  });
  const ctx: CommandContext = {
    session, flags, stdout: io.stdout, controlTotals: totals,
    pollMs: positiveInt(io.env.IMPORT_MIGRATE_POLL_MS, 1500),
    progress: () => (io.tty ? terminalProgress(io.tty) : plainProgress(io.err, positiveInt(io.env.IMPORT_MIGRATE_PROGRESS_MS, 5000))),
    note: (text) => io.err(text),
    refuse: (reason) => ({ exit: EXIT_FAILED, json: {}, text: '', refused: reason }),
    hint: (args) => commandLine(args, baseUrl),
  };
  try {
    const result = await command.run(ctx, positionals.slice(1));
    if (result.refused) return fail(EXIT_FAILED, result.refused);
    if (flags.json) io.out(`${JSON.stringify(result.json)}\n`);
    else if (result.text) io.out(result.text);
    return result.exit;
  } catch (error) {
    // Still busy or unavailable after the retries is as good as unreachable for the caller.
    if (error instanceof UnreachableError || (error instanceof ApiError && isUnavailable(error.status))) return fail(EXIT_USAGE, error.message);
    // FILE could be read when the command line was checked, and no longer: not the service's doing.
    if (error instanceof FileReadError) return fail(EXIT_USAGE, error.message);
    if (error instanceof ApiError) return fail(EXIT_FAILED, error.message);
    return fail(EXIT_FAILED, `unexpected failure: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function checkCommandLine(name: string, command: CommandSpec, args: string[], flags: Flags): void {
  if (args.length !== command.args.length) {
    throw new UsageError(args.length < command.args.length ? `missing ${command.args.slice(args.length).join(' ')}` : `unexpected argument "${args[command.args.length]}"`);
  }
  for (const option of Object.keys(flags)) {
    if (!GLOBAL_OPTIONS.has(option) && !command.options.includes(option)) throw new UsageError(`--${option} does not apply to ${name}`);
  }
  if (name === 'run') {
    const creating = ['supplier', 'team', 'dry-run', 'on-drift', 'not-before', 'not-after', 'max-rate', 'control-totals'].filter((o) => flags[o] !== undefined);
    if (flags.resume !== undefined && creating.length > 0) throw new UsageError(`--resume takes no --${creating[0]}: the job has them`);
    if (flags.resume === undefined && (!flags.supplier || !flags.team)) throw new UsageError('give --supplier and --team, or --resume JOB');
    for (const option of ['not-before', 'not-after']) {
      if (flags[option] !== undefined && !UTC.test(flags[option] as string)) throw new UsageError(`--${option} must be a UTC time like 2026-01-31T22:00:00Z`);
    }
    if (flags['on-drift'] !== undefined && !['warn', 'fail'].includes(flags['on-drift'] as string)) {
      throw new UsageError('--on-drift must be warn (a record that differs from its stored account succeeds, with warnings) or fail');
    }
    if (flags['max-rate'] !== undefined && maxRate(flags['max-rate'] as string) === undefined) {
      throw new UsageError('--max-rate must be a whole number of records a minute from 1 to 1000000');
    }
  }
  if (name === 'jobs' && !flags.supplier) throw new UsageError('--supplier is required');
  if (flags.outcome !== undefined && !OUTCOMES.includes(flags.outcome as string)) throw new UsageError(`--outcome must be one of ${OUTCOMES.join(', ')}`);
  if (flags.csv && flags.json && name !== 'reconcile') throw new UsageError('give --csv or --json, not both');
  if (name === 'reconcile' && flags.csv === '') throw new UsageError('--csv needs a file name');
}

/**
 * run's FILE is a regular file this process can open, checked before a job is made for it: the upload
 * reads it as it goes (and again after a dropped connection), so a directory, a pipe or a file it cannot
 * read would otherwise fail only once the job exists, and look like the service's fault.
 */
async function checkFile(file: string): Promise<void> {
  const info = await stat(file).catch((error: unknown) => { throw new UsageError(`cannot read ${file}: ${FileReadError.reason(error)}`); });
  if (info.isDirectory()) throw new UsageError(`${file} is a directory, not a file`);
  if (!info.isFile()) throw new UsageError(`${file} is not a regular file (the upload reads it more than once)`);
  const handle = await open(file, 'r').catch((error: unknown) => { throw new UsageError(`cannot read ${file}: ${FileReadError.reason(error)}`); });
  await handle.close();
  // Said before a job is made for it: an empty file, or a gzip that is not one, left an empty open job behind.
  const holds = await holdsRecord(file).catch((error: unknown) => { throw new UsageError((error as Error).message); });
  if (!holds) throw new UsageError(`${file} holds no record: every line of it is blank`);
}

/** FILE can be written: a file (or none yet) in a folder that is there and writable. Checked before the service is asked. */
async function checkWritable(file: string): Promise<void> {
  const info = await stat(file).catch(() => undefined);
  if (info?.isDirectory()) throw new UsageError(`--csv ${file} is a directory, not a file`);
  await access(info ? file : dirname(file), constants.W_OK)
    .catch((error: unknown) => { throw new UsageError(`--csv ${file} cannot be written: ${FileReadError.reason(error)}`); });
}

/**
 * The legacy system's figures for the book, from a JSON file: one object, sent as the job's
 * control_totals exactly as written (the service checks each figure and names the one it refuses).
 */
async function controlTotals(file: string): Promise<Record<string, unknown>> {
  const text = await readFile(file, 'utf8').catch(() => { throw new UsageError(`cannot read ${file}`); });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--control-totals ${file} is not JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`--control-totals ${file} must hold one JSON object, like {"accounts": 2000, "balance_total": "-1204.50"}`);
  }
  return value as Record<string, unknown>;
}

/** `import-migrate ARGS [--url URL]`, quoted for a POSIX shell where a word needs it. */
function commandLine(args: string[], baseUrl: string): string {
  const url = baseUrl.replace(/\/+$/, '') === DEFAULT_URL ? [] : ['--url', baseUrl];
  return ['import-migrate', ...args, ...url].map(shellWord).join(' ');
}

const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

function positiveInt(raw: string | undefined, fallback: number): number {
  const value = Number(raw);
  return raw && Number.isInteger(value) && value > 0 ? value : fallback;
}

export function usage(): string {
  return [
    'import-migrate: run a migration from an NDJSON file against the import service.',
    '',
    'Usage:',
    ...Object.values(COMMANDS).map((c) => `  import-migrate ${c.synopsis}`),
    `  import-migrate ${CONVERT_SYNOPSIS}`,
    '',
    'Options for every command:',
    '  --url URL        the service (default: $IMPORT_URL, else http://127.0.0.1:8000)',
    '  --api-key KEY    the organisation API key (default: $IMPORT_API_KEY)',
    '  --json           print one JSON object at the end instead of text',
    '',
    'run creates a job, uploads FILE (.ndjson or .ndjson.gz) streaming, starts the job and watches it;',
    'failed records go to FILE.<job id>.failed.ndjson. --resume JOB uploads the lines after the job\'s',
    'counts.total, then goes on the same way (refused when FILE\'s line there names another account than',
    'the job\'s last: not the file uploaded). Ctrl-C while watching leaves the job running.',
    '--max-rate N starts at most N of the job\'s records a minute (the job\'s max_records_per_minute).',
    '--control-totals TOTALS.json declares the legacy system\'s figures for the book, which reconcile sets',
    'beside the file\'s and the store\'s: one JSON object such as {"accounts": 2000, "balance_total": "-1204.50"}.',
    'pause stops the job starting records (those running finish); resume goes on from where it was.',
    '',
    'reconcile prints the job\'s reconciliation (control, file and migrated totals by measure) and with',
    '--csv FILE writes its exceptions there. Exit 0 balanced, 1 differs or not finished, 2 usage or connection.',
    '',
    'convert turns legacy CSV exports into a book (NDJSON, gzip when the name ends .gz) as the YAML mapping',
    'says, offline; rows it cannot map go to BOOK.rejects.csv. --init prints a starting mapping from the',
    'files\' headers. Exit 0 all rows mapped, 1 some rejected, 2 a bad mapping (with its line).',
    '',
    'Tuning (environment): IMPORT_MIGRATE_POLL_MS (job polling, default 1500), IMPORT_MIGRATE_PROGRESS_MS',
    '(plain progress lines, default 5000), IMPORT_MIGRATE_RETRY_DELAY_MS (first retry delay, default 500;',
    'network errors, 408, 429 and 5xx answers are retried 4 times with doubling delays).',
    '',
    'Exit status: 0 every record succeeded or was skipped; 1 a record failed or the service refused;',
    '2 the command line is wrong (FILE too) or the service cannot be reached, or is unavailable after the retries;',
    '130 interrupted (the job goes on).',
    '',
  ].join('\n');
}
