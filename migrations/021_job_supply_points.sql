-- Within one job's file, an electricity supply point identifier belongs to the first line that names
-- it: a later line naming it on another account fails at upload with supply_point_already_registered
-- (as the create would refuse it), whatever order the workers would have run the two records in. So
-- a pre-flight and the real run of the same file give the same verdicts. One row per identifier of
-- each record accepted at upload.
CREATE TABLE migration_job_supply_points (
  job_id      uuid NOT NULL REFERENCES migration_jobs(id),
  identifier  text NOT NULL,
  line        integer NOT NULL,
  PRIMARY KEY (job_id, identifier)
);
