-- Statistics (D14) and the failures filter on the lists: answered from indexes, not by scanning
-- every create attempt of a supplier.

-- The attr of an attempt's first error (the dot path of account_failed_validation, or the field a
-- refusal names), so failures can be grouped by code and attr.
ALTER TABLE create_attempts ADD COLUMN error_attr text;

-- The latest create attempt of each import process, kept on its row by the trigger below, in the
-- transaction that records the attempt. "Latest" is the highest attempt id, as the status endpoint
-- reads it. Without it, "is this account failing" means finding the newest of its attempts, one index
-- probe per staged account: seconds at a million accounts.
ALTER TABLE account_imports
  ADD COLUMN last_attempt_id bigint,
  ADD COLUMN last_attempt_outcome text,
  ADD COLUMN last_error_code text,
  ADD COLUMN last_error_attr text;

CREATE FUNCTION create_attempts_track_latest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE account_imports
     SET last_attempt_id = NEW.id, last_attempt_outcome = NEW.outcome,
         last_error_code = NEW.error_code,
         -- '' when the error names no field: an equality the group index can answer, unlike NULL.
         last_error_attr = CASE WHEN NEW.outcome = 'failed' THEN coalesce(NEW.error_attr, '') END
   WHERE supplier_id = NEW.supplier_id AND external_account_number = NEW.external_account_number
     AND (last_attempt_id IS NULL OR last_attempt_id < NEW.id);
  RETURN NULL;
END $$;

CREATE TRIGGER create_attempts_track_latest AFTER INSERT ON create_attempts
  FOR EACH ROW EXECUTE FUNCTION create_attempts_track_latest();

UPDATE account_imports ai
   SET last_attempt_id = ca.id, last_attempt_outcome = ca.outcome, last_error_code = ca.error_code,
       last_error_attr = CASE WHEN ca.outcome = 'failed' THEN coalesce(ca.error_attr, '') END
  FROM (SELECT DISTINCT ON (supplier_id, external_account_number) * FROM create_attempts
        ORDER BY supplier_id, external_account_number, id DESC) ca
 WHERE ca.supplier_id = ai.supplier_id AND ca.external_account_number = ai.external_account_number;

-- Counts by state: one index-only scan of the supplier's rows (staged / imported / skipped / failed).
CREATE INDEX account_imports_stats_idx ON account_imports (supplier_id, skipped, last_attempt_outcome) INCLUDE (account_id);

-- The failing accounts: error groups (by code and attr, examples by number) and the `?state=failed`
-- lists (keyset order of D7). Partial, so they hold only the accounts that are failing now.
CREATE INDEX account_imports_failing_groups_idx ON account_imports (supplier_id, last_error_code, last_error_attr, external_account_number)
  WHERE account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed';
CREATE INDEX account_imports_failing_list_idx ON account_imports (supplier_id, staged_at, external_account_number)
  WHERE account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed';

-- Accounts created per hour of the last 48 hours: a range of this index.
CREATE INDEX accounts_supplier_created_idx ON accounts (supplier_id, created_at);
