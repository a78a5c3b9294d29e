-- A job keeps a bounded number of its records on the queue at once; its dispatcher counts the
-- records it has sent that are not finished yet, and this index holds just those.
CREATE INDEX migration_job_records_in_flight_idx ON migration_job_records (job_id, line)
  WHERE enqueued AND outcome IN ('pending', 'running');
