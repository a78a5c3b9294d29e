-- Job controls: a job paused by its own control, and a throttle on the records it starts.
ALTER TABLE migration_jobs
  -- Set by pause/, cleared by resume/ and when the job ends. While set, no record of the job starts;
  -- the job shows state `paused` (as it does while its supplier is paused).
  ADD COLUMN paused boolean NOT NULL DEFAULT false,
  ADD COLUMN max_records_per_minute integer CHECK (max_records_per_minute > 0),
  -- The throttle's token bucket, kept on the row so every instance's dispatcher shares it: the
  -- records the job may still send, as of throttle_at (null: full to one record, as a new throttle).
  ADD COLUMN throttle_tokens double precision,
  ADD COLUMN throttle_at timestamptz;
