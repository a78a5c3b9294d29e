// The closed list of top-level error codes and the one function that maps each to its HTTP status.
// Adding a code means adding it here; the switch below will not compile until it has a status.
export const ERROR_CODES = [
  // 400: request shape and field rules (D4)
  'account_failed_validation', 'invalid', 'parse_error',
  // 400: a path the router cannot read (a malformed percent-escape)
  'bad_url',
  // 400: suppliers (D3, D6)
  'import_supplier_not_found', 'import_supplier_paused', 'import_supplier_complete',
  // 400: account state and creation (D6)
  'account_not_staged', 'account_already_imported', 'account_marked_to_skip', 'account_import_in_progress',
  'operations_team_not_found', 'supply_point_already_registered', 'dry_run_rolled_back',
  // 400: imported data (D8, D9)
  'TRANSACTION_IMPORT_ERROR', 'account_balance_out_of_range', 'statement_period_overlap', 'payment_instruction_not_found',
  'payment_vendor_rejected', 'payment_vendor_not_found', 'active_payment_instruction_exists',
  // 400: a history item sent again under its identifier with other content (core/conflicts.ts)
  'conflict',
  // 400: migration jobs (D11)
  'migration_job_not_open', 'migration_job_empty', 'migration_job_finished', 'migration_job_not_finished', 'migration_job_too_large',
  'migration_job_not_paused',
  // 400: a webhook endpoint URL the service may not deliver to (a private address, a scheme other than http(s))
  'webhook_url_not_allowed',
  // 401
  'not_authenticated', 'authentication_failed', 'token_expired',
  // 404, 405, 413, 415, 429
  'not_found', 'account_not_found', 'method_not_allowed', 'payload_too_large', 'unsupported_media_type',
  'concurrency_limit_exceeded', 'too_many_requests',
  // socket-level (the request never reached a route), and a records upload that stalled: 408, 431
  'request_timeout', 'request_header_fields_too_large',
  // 5xx
  'payment_vendor_unavailable', 'service_unavailable', 'internal_error',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export function statusFor(code: ErrorCode): number {
  switch (code) {
    case 'account_failed_validation': case 'invalid': case 'parse_error': case 'bad_url':
    case 'import_supplier_not_found': case 'import_supplier_paused': case 'import_supplier_complete':
    case 'account_not_staged': case 'account_already_imported': case 'account_marked_to_skip':
    case 'account_import_in_progress': case 'operations_team_not_found': case 'supply_point_already_registered':
    case 'dry_run_rolled_back': case 'TRANSACTION_IMPORT_ERROR': case 'account_balance_out_of_range': case 'statement_period_overlap':
    case 'payment_instruction_not_found': case 'payment_vendor_rejected': case 'payment_vendor_not_found':
    case 'active_payment_instruction_exists': case 'conflict':
    case 'migration_job_not_open': case 'migration_job_empty': case 'migration_job_finished':
    case 'migration_job_not_finished': case 'migration_job_too_large': case 'migration_job_not_paused': case 'webhook_url_not_allowed':
      return 400;
    case 'not_authenticated': case 'authentication_failed': case 'token_expired':
      return 401;
    case 'not_found': case 'account_not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'payload_too_large':
      return 413;
    case 'unsupported_media_type':
      return 415;
    case 'concurrency_limit_exceeded': case 'too_many_requests':
      return 429;
    case 'request_timeout':
      return 408;
    case 'request_header_fields_too_large':
      return 431;
    case 'payment_vendor_unavailable': case 'internal_error':
      return 500;
    case 'service_unavailable':
      return 503;
  }
}

/** One item of `errors` (spec 7.1): `attr` is a dot path with zero-based indexes. */
export interface FieldError {
  detail: string;
  code: string;
  attr: string;
}

export interface AppErrorOptions {
  /** Field items (spec 7.1). */
  errors?: FieldError[] | undefined;
  /** Top-level fields some answers add (D6's already-imported create, spec 4.5's TRANSACTION_IMPORT_ERROR). */
  extra?: Record<string, unknown> | undefined;
  /** Response headers the answer needs (Retry-After, Allow). */
  headers?: Record<string, string> | undefined;
}

/**
 * Every failure a request or a job step can end in. Services throw it; the one error mapper turns it
 * into the JSON body of spec section 7. It knows nothing of HTTP beyond the status its code maps to.
 */
export class AppError extends Error {
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(readonly code: ErrorCode, readonly detail: string, options: AppErrorOptions = {}) {
    super(detail);
    this.name = 'AppError';
    this.status = statusFor(code);
    this.errors = options.errors;
    this.extra = options.extra;
    this.headers = options.headers;
  }

  /** A single-field failure: the top-level code also appears as the field's item (D4). */
  static field(code: ErrorCode, detail: string, attr: string, extra?: Record<string, unknown>): AppError {
    return new AppError(code, detail, { errors: [{ detail, code, attr }], extra });
  }

  body(): Record<string, unknown> {
    return { detail: this.detail, code: this.code, ...(this.errors ? { errors: this.errors } : {}), ...this.extra };
  }
}
