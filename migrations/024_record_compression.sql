-- A migration job's records (about 9 KB of JSON each for an account with its history) and staged
-- account data are kept compressed by PostgreSQL. Its default method (pglz) cost a batch of 500 job
-- records 140 to 240 ms to write here, lz4 about 110 ms, and lz4 also reads back faster. lz4 is used
-- where the server is built with it; a build without it (the embedded store) keeps pglz, and so does
-- a server older than PostgreSQL 14, which has no per-column compression (the statements are run by
-- EXECUTE so that its syntax error is caught here). Only values written from now on change, and the
-- table is not rewritten: what is stored reads the same either way.
DO $$
BEGIN
  EXECUTE 'ALTER TABLE migration_job_records ALTER COLUMN record SET COMPRESSION lz4';
  EXECUTE 'ALTER TABLE account_imports ALTER COLUMN data SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
  NULL;
END $$;
