import type { ColumnType, Generated, Selectable } from 'kysely';

// Row types of the tables in /migrations. Dates travel as 'YYYY-MM-DD' strings and numerics as
// decimal strings (see type-parsers.ts); timestamptz as Date.
type Id = Generated<number>;
type Json<T> = ColumnType<T, string, string>;
/** A jsonb column with a database default: optional on insert. */
type JsonDefault<T> = ColumnType<T, string | undefined, string>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Decimal = ColumnType<string, string | number, string | number>;

export interface OrganisationsTable { id: Id; name: string; created_at: Generated<Date> }
export interface ApiKeysTable {
  id: Id; organisation_id: number; prefix: string; secret_hash: string;
  created_at: Generated<Date>; revoked_at: Date | null;
}
export interface SettingsTable { name: string; value: string }
export type SupplierStatus = 'ongoing' | 'paused' | 'complete';
export interface ImportSuppliersTable {
  id: Id; code: string; organisation_id: number; status: Generated<SupplierStatus>;
  customer_emails: Generated<boolean>; documents_root: Generated<string>; created_at: Generated<Date>;
}
export interface OperationsTeamsTable { id: Id; name: string; created_at: Generated<Date> }
export interface PaymentVendorsTable {
  id: Id; code: string; kind: string; url: string; secret: string | null;
  timeout_ms: Generated<number>; created_at: Generated<Date>;
}

export interface AccountImportsTable {
  id: Id; supplier_id: number; external_account_number: string; data: Json<unknown>;
  staged_at: Timestamp; updated_at: Timestamp; skipped: Generated<boolean>; account_id: number | null;
  // The latest create attempt, kept by a trigger of migrations 007 and 009 (stats and the failures filter).
  last_attempt_id: Generated<number | null>; last_attempt_outcome: Generated<string | null>;
  last_error_code: Generated<string | null>; last_error_attr: Generated<string | null>;
  last_error_group_code: Generated<string | null>;
}
export interface AccountsTable {
  id: Id; number: string; account_import_id: number; supplier_id: number; external_account_number: string;
  operations_team_id: number; billing_street_address: string; billing_locality: string | null;
  billing_administrative_area: string | null; billing_country: string; billing_postal_code: string;
  unknown_occupier: boolean | null; metadata: JsonDefault<unknown>; created_at: Timestamp;
  /** The sum of its transactions (numeric, as text), kept by migration 015's trigger: never written by the code. */
  balance: ColumnType<string, never, never>;
}
export interface CustomersTable {
  id: Id; account_id: number; position: number; given_name: string; family_name: string;
  email: string | null; mobile: string | null; landline: string | null; alternative_phone_numbers: JsonDefault<unknown>;
  date_of_birth: string | null; opted_into_updates: boolean | null; opted_into_offers: boolean | null;
  opted_into_sms: boolean | null;
}
export interface SupplyAddressesTable {
  id: Id; account_id: number; position: number; supply_address1: string; supply_address2: string | null;
  supply_address3: string | null; supply_address4: string | null; supply_postcode: string;
  customer_at_supply_address_from_date: string | null;
}
export interface SupplyPointsTable {
  id: Id; account_id: number; supply_address_id: number; position: number; supply_type: string;
  supply_start_date: string; last_billed_to_date: string | null; identifier: string | null; details: JsonDefault<unknown>;
}
export interface AgreementsTable { id: Id; supply_point_id: number; position: number; tariff_code: string; effective_from: string }
export interface MetersTable {
  id: Id; supply_point_id: number; position: number; serial_number: string; subgroup: number | null;
  seal_date: string | null; meter_number: number | null; status: string | null; active_from: string | null;
  meter_type: Json<unknown> | null;
}
export interface RegistersTable {
  id: Id; meter_id: number; position: number; register_type: string; whole_digits: number | null;
  decimal_digits: number | null; active_from: string | null; multiplier: Decimal | null;
}
export interface TransferReadingsTable {
  id: Id; supply_point_id: number; position: number; register_type: string; read_date: string; value: Decimal;
}
export interface CreateAttemptsTable {
  id: Id; supplier_id: number; external_account_number: string; dry_run: boolean;
  outcome: 'created' | 'dry_run_rolled_back' | 'failed'; error_code: string | null; error_detail: string | null;
  started_at: Timestamp; finished_at: Timestamp; error_attr: Generated<string | null>;
  error_field_code: Generated<string | null>;
}
// Statistics counters, kept by triggers of migration 009 (never written by the code): summed on read.
export interface AccountImportCountsTable {
  supplier_id: number; shard: number; staged: number; imported: number; skipped: number; failed: number;
}
export interface AccountErrorGroupCountsTable { supplier_id: number; code: string; attr: string; shard: number; failed: number }
export interface AccountsCreatedPerHourTable { supplier_id: number; hour: number; shard: number; created: number }
export interface OutboxEmailsTable {
  id: Id; account_id: number; recipient: string; subject: string; body: string; created_at: Timestamp;
  attempts: Generated<number>; next_attempt_at: Timestamp; last_error: string | null; sent_at: Date | null;
}

export interface NotesTable {
  id: Id; account_id: number; body: string | null; document_paths: JsonDefault<unknown>; created_at: Timestamp;
  is_pinned: Generated<boolean>; unpin_at: Date | string | null; inserted_at: Timestamp;
}
export interface TransactionsTable {
  id: Id; account_id: number; transaction_id: string; transaction_date: string; original_date: string | null;
  amount: Decimal; type: string; reason: string | null; display_note: string | null; note: string | null;
  reference: string | null; payment_type: string | null; product_code: string | null;
  line_items: Json<unknown> | null; tax_items: Json<unknown> | null; description: string | null; created_at: Timestamp;
}
export interface StatementsTable {
  id: Id; account_id: number; statement_id: string; bill_period_from_date: string; bill_period_to_date: string;
  issued_date: string; number: string; gross_amount: Decimal; statement_path: string | null; created_at: Timestamp;
}
export interface PaymentInstructionsTable {
  id: Id; account_id: number; vendor_id: number; reference: string; type: string; status: string | null;
  details: JsonDefault<unknown>; active: Generated<boolean>; created_at: Timestamp;
}
export interface EventsTable {
  /** supplier_id is null only for a test ping (type `ping`, migration 018). */
  id: Id; xid: Generated<string>; supplier_id: number | null; type: string; external_account_number: string | null;
  data: Json<unknown>; created_at: Generated<Date>;
}

export interface MigrationJobsTable {
  id: string; supplier_id: number; operations_team_id: number; dry_run: Generated<boolean>; state: Generated<string>;
  cancel_requested: Generated<boolean>; not_before: Date | null; not_after: Date | null; total_lines: Generated<number>;
  created_at: Generated<Date>; started_at: Date | null; finished_at: Date | null;
  paused: Generated<boolean>; max_records_per_minute: number | null; throttle_tokens: number | null; throttle_at: Date | null;
  /** What a record whose account is already imported with other data does: warn or fail (migration 020). */
  on_drift: Generated<string>;
  /** A job's counts, failures by code and records with warnings, kept when it ends (migration 025). */
  final_figures: Json<unknown> | null;
}
/** A job's records by outcome, one row per job and shard, kept by triggers (migration 026); sum the shards. */
export interface MigrationJobRecordCountsTable {
  job_id: string; shard: number; pending: number; running: number; succeeded: number; skipped: number; failed: number; cancelled: number;
}
export interface MigrationJobRecordsTable {
  job_id: string; line: number; external_account_number: string | null; record: Json<unknown> | null;
  outcome: Generated<string>; step: string | null; created: boolean | null; service_account_number: string | null;
  errors: JsonDefault<unknown>; final_at_upload: Generated<boolean>; enqueued: Generated<boolean>; attempts: Generated<number>;
  created_at: Generated<Date>; finished_at: Date | null; warnings: JsonDefault<unknown>;
  /** What the line holds (migration 022): counts, and money as numeric text. */
  file_customers: Generated<number>; file_supply_points: Generated<number>; file_meters: Generated<number>;
  file_statements: Generated<number>; file_transactions: Generated<number>; file_notes: Generated<number>;
  file_payment_instructions: Generated<number>; file_balance_total: Generated<string>; file_statements_gross_total: Generated<string>;
}

export interface WebhookEndpointsTable {
  id: string; organisation_id: number; url: string; event_types: string[] | null; secret: string;
  enabled: Generated<boolean>; disabled_reason: string | null; created_at: Generated<Date>;
  /** Since when it receives events: its creation, or the last time it was enabled again. */
  enabled_at: Generated<Date>;
  description: string | null;
  /** The secret a rotation replaced: it signs beside `secret` until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}
export interface WebhookDeliveriesTable {
  id: Id; endpoint_id: string; event_id: number; attempt: number; status_code: number | null;
  latency_ms: number | null; error: string | null; at: Generated<Date>; event_type: string;
}
export interface WebhookFanoutCursorTable { singleton: Generated<boolean>; xid: string | null; event_id: number | null }

export interface RefreshTokensTable {
  jti: string; family_id: string; api_key_id: number; issued_at: Generated<Date>; expires_at: Date;
  used_at: Date | null; revoked_at: Date | null;
}

export interface Database {
  organisations: OrganisationsTable;
  api_keys: ApiKeysTable;
  settings: SettingsTable;
  import_suppliers: ImportSuppliersTable;
  operations_teams: OperationsTeamsTable;
  payment_vendors: PaymentVendorsTable;
  account_imports: AccountImportsTable;
  accounts: AccountsTable;
  customers: CustomersTable;
  supply_addresses: SupplyAddressesTable;
  supply_points: SupplyPointsTable;
  agreements: AgreementsTable;
  meters: MetersTable;
  registers: RegistersTable;
  transfer_readings: TransferReadingsTable;
  create_attempts: CreateAttemptsTable;
  account_import_counts: AccountImportCountsTable;
  account_error_group_counts: AccountErrorGroupCountsTable;
  accounts_created_per_hour: AccountsCreatedPerHourTable;
  outbox_emails: OutboxEmailsTable;
  notes: NotesTable;
  transactions: TransactionsTable;
  statements: StatementsTable;
  payment_instructions: PaymentInstructionsTable;
  events: EventsTable;
  migration_jobs: MigrationJobsTable;
  migration_job_records: MigrationJobRecordsTable;
  migration_job_record_counts: MigrationJobRecordCountsTable;
  refresh_tokens: RefreshTokensTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_fanout_cursor: WebhookFanoutCursorTable;
}

export type Supplier = Selectable<ImportSuppliersTable>;
