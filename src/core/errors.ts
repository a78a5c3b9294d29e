// The closed list of top-level error codes: each code with its HTTP status and its default detail in
// one entry (as Fastify's own errors are each one `createError(code, message, status)`), so a code,
// its status and its words cannot drift apart. Adding a code means adding its entry here; the OpenAPI
// document checks every code a route lists against the status it lists it under (openapi.ts).
interface ErrorEntry { readonly status: number; readonly message: string }

const entry = (status: number, message: string): ErrorEntry => ({ status, message });

const ERRORS = {
  // 400: request shape and field rules
  account_failed_validation: entry(400, 'The account data failed validation.'),
  invalid: entry(400, 'The request failed validation.'),
  parse_error: entry(400, 'The body is not valid JSON.'),
  // 400: a path the router cannot read (a malformed percent-escape)
  bad_url: entry(400, 'The path holds a malformed percent-escape (a "%" not followed by a valid UTF-8 sequence).'),
  // 400: suppliers
  import_supplier_not_found: entry(400, 'No such import supplier.'),
  import_supplier_paused: entry(400, 'The import supplier is paused.'),
  import_supplier_complete: entry(400, 'The import supplier is complete.'),
  // 400: account state and creation
  account_not_staged: entry(400, 'The account has no staged data; stage it with create-or-update first.'),
  account_already_imported: entry(400, 'The account is already imported.'),
  account_marked_to_skip: entry(400, 'The account is marked to be skipped and cannot be staged or created.'),
  account_import_in_progress: entry(400, 'Another create of the account is running; check its status, then retry if needed.'),
  account_staged_data_changed: entry(400, 'Another request staged other data for the account while this record was creating it; nothing was created.'),
  operations_team_not_found: entry(400, 'No such operations team.'),
  supply_point_already_registered: entry(400, 'A supply point is already registered to another account.'),
  dry_run_rolled_back: entry(400, 'The dry run succeeded and was rolled back.'),
  // 400: imported data
  TRANSACTION_IMPORT_ERROR: entry(400, 'The transactions could not be imported.'),
  account_balance_out_of_range: entry(400, 'The account balance would leave its allowed range.'),
  statement_period_overlap: entry(400, 'The statement period overlaps another statement of the account.'),
  payment_instruction_not_found: entry(400, 'No such payment instruction.'),
  payment_vendor_rejected: entry(400, 'The payment vendor rejected the instruction; do not retry the request as it is.'),
  payment_vendor_not_found: entry(400, 'No such payment vendor.'),
  payment_instruction_not_active: entry(400, 'The payment vendor reports the instruction as ended (cancelled or expired, say): it cannot be the account\'s active instruction.'),
  active_payment_instruction_exists: entry(400, 'The account already has an active payment instruction with another vendor or reference.'),
  // 400: a history item sent again under its identifier with other content (core/conflicts.ts); for
  // import-admin, a change the stored state refuses (a key already revoked, a vendor still in use)
  conflict: entry(400, 'An item with this identifier already exists with other content.'),
  // 400: migration jobs
  migration_job_not_open: entry(400, 'The migration job is no longer open: records are added, and the job is started, only while it is open.'),
  migration_job_empty: entry(400, 'The migration job has no records: upload some before starting it.'),
  migration_job_finished: entry(400, 'The migration job has already ended.'),
  migration_job_not_finished: entry(400, 'Only a completed or cancelled migration job can be retried.'),
  migration_job_window_closed: entry(400, 'The migration job\'s window (not_after) has passed: it cannot be retried.'),
  migration_job_too_large: entry(400, 'The migration job holds as many records as it may.'),
  migration_job_not_paused: entry(400, 'The migration job was not paused.'),
  // 400: a webhook endpoint URL the service may not deliver to (a private address, a scheme other than http(s))
  webhook_url_not_allowed: entry(400, 'The service may not deliver to this URL.'),
  webhook_endpoint_disabled: entry(400, 'The webhook endpoint is disabled: enable it to send it a ping.'),
  // 401
  not_authenticated: entry(401, 'Authentication credentials were not provided.'),
  authentication_failed: entry(401, 'Invalid or revoked credentials.'),
  token_expired: entry(401, 'The token has expired; obtain a new one.'),
  // 404, 405, 408, 409, 413, 415, 417, 429, 431 (408, 417 and 431: the request never reached a route, or a records upload stalled)
  not_found: entry(404, 'Not found.'),
  account_not_found: entry(404, 'No such account for this import supplier.'),
  method_not_allowed: entry(405, 'Method not allowed.'),
  // 409: the service team's operations (import-admin): a name or code that is taken
  already_exists: entry(409, 'It already exists.'),
  request_timeout: entry(408, 'The request was not received in time.'),
  payload_too_large: entry(413, 'The request body is larger than the limit.'),
  unsupported_media_type: entry(415, 'Send the body as application/json.'),
  expectation_failed: entry(417, 'Only "Expect: 100-continue" is supported; send the request without this Expect header.'),
  concurrency_limit_exceeded: entry(429, 'Too many creates are running; retry shortly.'),
  too_many_requests: entry(429, 'Too many requests; retry later.'),
  request_header_fields_too_large: entry(431, 'The request headers are too large.'),
  // 5xx
  payment_vendor_unavailable: entry(500, 'The payment vendor is unavailable; retry the request as it is.'),
  internal_error: entry(500, 'An unexpected error occurred. It has been logged with this request id.'),
  service_unavailable: entry(503, 'The database is unavailable; retry shortly.'),
} as const satisfies Record<string, ErrorEntry>;

export type ErrorCode = keyof typeof ERRORS;

export const statusFor = (code: ErrorCode): number => ERRORS[code].status;

/** The default detail of a code: what an answer says when nothing more particular is known. */
export const messageFor = (code: ErrorCode): string => ERRORS[code].message;

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

  constructor(readonly code: ErrorCode, readonly detail: string = messageFor(code), options: AppErrorOptions = {}) {
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
