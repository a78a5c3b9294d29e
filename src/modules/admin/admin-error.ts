// The one failure of the service team's operations and of import-admin around them: a code from this
// closed list and a one-line reason. import-admin prints it (one line on stderr, or with --json
// `{"error": {"code", "message"}}` on stdout) and derives its exit status from the code alone.
export type AdminErrorCode =
  // The command line or its environment is wrong: nothing was tried.
  | 'unknown_command' | 'missing_argument' | 'unexpected_argument' | 'invalid_argument' | 'invalid_configuration'
  // The operation was refused.
  | 'not_found' | 'already_exists' | 'conflict'
  // The store could not be used.
  | 'store_in_use' | 'store_unavailable' | 'internal_error';

export class AdminError extends Error {
  override name = 'AdminError';

  constructor(readonly code: AdminErrorCode, message: string) {
    super(message);
  }
}
