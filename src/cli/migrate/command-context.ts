import type { ApiSession } from './api-session.ts';
import type { Progress } from './progress.ts';

// What every import-migrate command gets, and what it gives back: the exit status, the one object
// --json prints, and the text printed otherwise.
export type Flags = Record<string, string | boolean | undefined>;

export interface CommandResult {
  exit: number;
  json: object;
  text: string;
  /** Set when the command was refused: the reason is printed as the one stderr line. */
  refused?: string;
}

export interface CommandContext {
  session: ApiSession;
  flags: Flags;
  /** run's --control-totals: the file's one JSON object, read when the command line was checked. */
  controlTotals: Record<string, unknown> | null;
  pollMs: number;
  /** The progress display for this run: bars on a terminal, plain lines elsewhere (on stderr). */
  progress(): Progress;
  /** A line for the person watching (stderr), never part of the result. */
  note(text: string): void;
  /** The service or the state of the job refuses what was asked: exit status 1, with the reason. */
  refuse(reason: string): CommandResult;
  /**
   * A command to suggest to the user (`import-migrate watch <id>`), written so that it runs as printed:
   * with `--url` when the service is not the default one (never with the API key).
   */
  hint(args: string[]): string;
  /** Where `results` streams to (stdout). */
  stdout: NodeJS.WritableStream;
}
