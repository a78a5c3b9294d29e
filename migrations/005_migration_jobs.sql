-- Migration jobs (D11): a job of one supplier, and its records, one row per uploaded line.
CREATE TABLE migration_jobs (
  id                  uuid PRIMARY KEY,
  supplier_id         bigint NOT NULL REFERENCES import_suppliers(id),
  operations_team_id  bigint NOT NULL REFERENCES operations_teams(id),
  dry_run             boolean NOT NULL DEFAULT false,
  -- open → scheduled/queued → running → completed/cancelled; `paused` is shown, never stored (it is
  -- the supplier's status at the time of reading).
  state               text NOT NULL DEFAULT 'open'
                      CHECK (state IN ('open', 'scheduled', 'queued', 'running', 'completed', 'cancelled')),
  cancel_requested    boolean NOT NULL DEFAULT false,
  not_before          timestamptz,
  not_after           timestamptz,
  -- Lines numbered so far (across uploads): the next line is total_lines + 1. Kept under the job
  -- row's lock by each upload batch, so concurrent uploads never share a number.
  total_lines         integer NOT NULL DEFAULT 0,
  created_at          timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  finished_at         timestamptz
);
CREATE INDEX migration_jobs_supplier_idx ON migration_jobs (supplier_id, created_at DESC, id DESC);

CREATE TABLE migration_job_records (
  job_id                   uuid NOT NULL REFERENCES migration_jobs(id),
  line                     integer NOT NULL,
  external_account_number  text,
  -- The record as uploaded (null when the line was not a JSON object).
  record                   jsonb,
  outcome                  text NOT NULL DEFAULT 'pending'
                           CHECK (outcome IN ('pending', 'running', 'succeeded', 'skipped', 'failed', 'cancelled')),
  step                     text CHECK (step IN ('parse', 'account', 'statements', 'transactions', 'notes', 'payment_instruction')),
  created                  boolean,
  service_account_number   text,
  errors                   jsonb NOT NULL DEFAULT '[]',
  -- The record's verdict was given at upload (parse failure, duplicate): a retry cannot change it.
  final_at_upload          boolean NOT NULL DEFAULT false,
  -- The record has a job on the queue (set in the transaction that sends it).
  enqueued                 boolean NOT NULL DEFAULT false,
  attempts                 integer NOT NULL DEFAULT 0,
  created_at               timestamptz NOT NULL DEFAULT now(),
  finished_at              timestamptz,
  PRIMARY KEY (job_id, line)
);
-- Counts by outcome, the records still to run, the first-error groups.
CREATE INDEX migration_job_records_outcome_idx ON migration_job_records (job_id, outcome, line);
-- One record per external account number and job (later ones fail as duplicates at upload).
CREATE UNIQUE INDEX migration_job_records_account_idx ON migration_job_records (job_id, external_account_number)
  WHERE NOT final_at_upload;
-- records_per_minute: the records finished lately.
CREATE INDEX migration_job_records_finished_idx ON migration_job_records (job_id, finished_at) WHERE finished_at IS NOT NULL;
-- Records still to be sent to the queue (start and retry send them in batches).
CREATE INDEX migration_job_records_unsent_idx ON migration_job_records (job_id, line) WHERE outcome = 'pending' AND NOT enqueued;
