-- A migration job's records by outcome, kept by triggers in the statements that write them. A job's
-- view, the statistics and /metrics counted the records of every job still going on every read: for
-- a job of a million records that was a scan of the whole job, about 200 ms of PostgreSQL's time
-- (both cores, in parallel), every 5 seconds for each dashboard watching. They now sum a few counter
-- rows. Whatever writes a record (an upload, a claim, a chunk, a cancel, a retry) moves its counts in
-- its own statement, so no path can forget to.

-- One row per job and shard (the transaction's, as the statistics' counters): concurrent chunks of
-- one job rarely wait on each other's row. A statement moves one row of its job, however many
-- outcomes it changes, so two transactions never take a job's counter rows in different orders. A
-- shard may go below zero (a record counted into one shard and out of another); only the sum means
-- anything.
CREATE TABLE migration_job_record_counts (
  job_id     uuid NOT NULL REFERENCES migration_jobs(id),
  shard      smallint NOT NULL,
  pending    bigint NOT NULL DEFAULT 0,
  running    bigint NOT NULL DEFAULT 0,
  succeeded  bigint NOT NULL DEFAULT 0,
  skipped    bigint NOT NULL DEFAULT 0,
  failed     bigint NOT NULL DEFAULT 0,
  cancelled  bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, shard)
);

-- Adds `n` records of `outcome` to the job's counts (n below zero takes them away).
CREATE FUNCTION migration_job_record_counts_add(p_job uuid, p_outcome text, p_n bigint) RETURNS void LANGUAGE sql AS $$
  INSERT INTO migration_job_record_counts AS c (job_id, shard, pending, running, succeeded, skipped, failed, cancelled)
  VALUES (p_job, stats_counter_shard(),
    CASE WHEN p_outcome = 'pending' THEN p_n ELSE 0 END, CASE WHEN p_outcome = 'running' THEN p_n ELSE 0 END,
    CASE WHEN p_outcome = 'succeeded' THEN p_n ELSE 0 END, CASE WHEN p_outcome = 'skipped' THEN p_n ELSE 0 END,
    CASE WHEN p_outcome = 'failed' THEN p_n ELSE 0 END, CASE WHEN p_outcome = 'cancelled' THEN p_n ELSE 0 END)
  ON CONFLICT (job_id, shard) DO UPDATE SET pending = c.pending + excluded.pending, running = c.running + excluded.running,
    succeeded = c.succeeded + excluded.succeeded, skipped = c.skipped + excluded.skipped,
    failed = c.failed + excluded.failed, cancelled = c.cancelled + excluded.cancelled
$$;

-- Once per statement, over the rows it wrote (its transition tables). An update that changes no
-- outcome (a record marked sent, its account number noted) adds nothing and takes no counter row.
CREATE FUNCTION migration_job_record_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM migration_job_record_counts_add(job_id, outcome, count(*)) FROM new_rows GROUP BY job_id, outcome ORDER BY job_id, outcome;
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM migration_job_record_counts_add(job_id, outcome, -count(*)) FROM old_rows GROUP BY job_id, outcome ORDER BY job_id, outcome;
  ELSE
    -- What a chunk's claim and its finish each run: the moves netted per job and outcome (an update
    -- that moved none leaves no row, so takes no lock), in one upsert.
    INSERT INTO migration_job_record_counts AS c (job_id, shard, pending, running, succeeded, skipped, failed, cancelled)
    SELECT job_id, stats_counter_shard(), coalesce(sum(n) FILTER (WHERE outcome = 'pending'), 0), coalesce(sum(n) FILTER (WHERE outcome = 'running'), 0),
        coalesce(sum(n) FILTER (WHERE outcome = 'succeeded'), 0), coalesce(sum(n) FILTER (WHERE outcome = 'skipped'), 0),
        coalesce(sum(n) FILTER (WHERE outcome = 'failed'), 0), coalesce(sum(n) FILTER (WHERE outcome = 'cancelled'), 0)
      FROM (SELECT job_id, outcome, sum(n) AS n
              FROM (SELECT job_id, outcome, 1 AS n FROM new_rows UNION ALL SELECT job_id, outcome, -1 FROM old_rows) AS moved
             GROUP BY job_id, outcome) AS d
     WHERE n <> 0 GROUP BY job_id ORDER BY job_id
    ON CONFLICT (job_id, shard) DO UPDATE SET pending = c.pending + excluded.pending, running = c.running + excluded.running,
      succeeded = c.succeeded + excluded.succeeded, skipped = c.skipped + excluded.skipped,
      failed = c.failed + excluded.failed, cancelled = c.cancelled + excluded.cancelled;
  END IF;
  RETURN NULL;
END $$;

-- Recounts every job from its records, should the counters ever be doubted, or after records were
-- written with triggers off: SELECT rebuild_migration_job_record_counts(); writers wait for the
-- transaction that calls it (a few seconds at a million records), readers do not.
CREATE FUNCTION rebuild_migration_job_record_counts() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE migration_job_records IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM migration_job_record_counts;
  INSERT INTO migration_job_record_counts (job_id, shard, pending, running, succeeded, skipped, failed, cancelled)
    SELECT job_id, 0, count(*) FILTER (WHERE outcome = 'pending'), count(*) FILTER (WHERE outcome = 'running'),
      count(*) FILTER (WHERE outcome = 'succeeded'), count(*) FILTER (WHERE outcome = 'skipped'),
      count(*) FILTER (WHERE outcome = 'failed'), count(*) FILTER (WHERE outcome = 'cancelled')
    FROM migration_job_records GROUP BY job_id;
END $$;

-- The first count. Its lock holds writers until this migration commits, triggers in place: a record
-- written between the count and the triggers would otherwise be lost to the counters.
SELECT rebuild_migration_job_record_counts();

CREATE TRIGGER migration_job_record_counts_insert AFTER INSERT ON migration_job_records
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION migration_job_record_counts_move();
CREATE TRIGGER migration_job_record_counts_update AFTER UPDATE ON migration_job_records
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION migration_job_record_counts_move();
CREATE TRIGGER migration_job_record_counts_delete AFTER DELETE ON migration_job_records
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION migration_job_record_counts_move();
