import { AppError, type ErrorCode } from '../core/errors.ts';

// The one failure import-admin reports: a code from this closed list and a one-line reason. It
// prints it (one line on stderr, or with --json `{"error": {"code", "message"}}` on stdout) and
// derives its exit status from the code alone. The services it calls throw AppError like every
// other service; `cliFailure` words theirs for a command line here, so CLI wording (flag names)
// stays in the CLI.
export type CliErrorCode =
  // The command line or its environment is wrong: nothing was tried.
  | 'unknown_command' | 'missing_argument' | 'unexpected_argument' | 'invalid_argument' | 'invalid_configuration'
  // The operation was refused.
  | 'not_found' | 'already_exists' | 'conflict'
  // The store could not be used.
  | 'store_in_use' | 'store_unavailable' | 'internal_error';

export class CliError extends Error {
  override name = 'CliError';

  constructor(readonly code: CliErrorCode, message: string) {
    super(message);
  }
}

/** The service codes import-admin reports under a code of its own; any other is unexpected there. */
const REPORTED: Partial<Record<ErrorCode, CliErrorCode>> = {
  invalid: 'invalid_argument', not_found: 'not_found', already_exists: 'already_exists', conflict: 'conflict',
};

/** Any failure as import-admin reports it: a service's rule of one option (`attr`) is worded as its flag. */
export function cliFailure(error: unknown): CliError {
  if (error instanceof CliError) return error;
  const reported = error instanceof AppError ? REPORTED[error.code] : undefined;
  if (!(error instanceof AppError) || !reported) return new CliError('internal_error', `unexpected failure: ${messageOf(error)}`);
  const attr = error.errors?.length === 1 ? error.errors[0]!.attr : undefined;
  return new CliError(reported, attr ? `--${attr.replaceAll('_', '-')} ${error.detail}` : error.detail);
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
