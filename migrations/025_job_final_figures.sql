-- A finished migration job's figures, kept on its row when it ends: its records counted by outcome,
-- its failures by error code and how many records have warnings. A job's view counted them from its
-- records on every read: about 140 ms for a job of a million records, for each job of a list a
-- dashboard refreshes every 5 seconds. Once a job has ended its records do not change until a retry,
-- which clears the figures. NULL for a job not ended, and for one that ended before this column
-- existed: its view counts its records, as before.
ALTER TABLE migration_jobs ADD COLUMN final_figures jsonb;
