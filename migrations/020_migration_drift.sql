-- Drift: a record naming an account that is already imported is compared with what was stored.
-- A job says what a difference does to the record (warn: a warning on its result; fail: the record
-- fails at step account with account_differs), and each record keeps its warnings. Both columns have
-- constant defaults, so existing rows are not rewritten.
ALTER TABLE migration_jobs ADD COLUMN on_drift text NOT NULL DEFAULT 'warn'
  CONSTRAINT migration_jobs_on_drift_check CHECK (on_drift IN ('warn', 'fail'));
ALTER TABLE migration_job_records ADD COLUMN warnings jsonb NOT NULL DEFAULT '[]';
-- The job's records_with_warnings counts these; most records have none, so the index stays small.
CREATE INDEX migration_job_records_warned_idx ON migration_job_records (job_id) WHERE warnings <> '[]'::jsonb;
