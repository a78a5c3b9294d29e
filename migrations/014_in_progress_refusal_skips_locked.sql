-- A create refused with account_import_in_progress records its attempt (D14) while the create it
-- was refused for is still running and holds the import's row (it reads it FOR UPDATE). Moving the
-- row's latest-attempt columns would wait for that create to end: the refusal's answer took as long
-- as the create, and with a frozen instance as long as its idle-in-transaction timeout. Such an
-- attempt now leaves the columns alone when the row is locked: the running create's own attempt
-- (created, or failed and recorded after its rollback) becomes the latest when it ends. Every other
-- attempt moves them as before, waiting for the row if it must.
-- The UPDATE below is migration 009's, unchanged.
CREATE OR REPLACE FUNCTION create_attempts_track_latest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.error_code = 'account_import_in_progress' THEN
    PERFORM FROM account_imports
     WHERE supplier_id = NEW.supplier_id AND external_account_number = NEW.external_account_number
     FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
  END IF;
  UPDATE account_imports
     SET last_attempt_id = NEW.id, last_attempt_outcome = NEW.outcome,
         last_error_code = NEW.error_code,
         last_error_group_code = CASE WHEN NEW.outcome = 'failed' THEN coalesce(NEW.error_field_code, NEW.error_code, 'internal_error') END,
         -- '' when the error names no field: an equality the group index can answer, unlike NULL.
         last_error_attr = CASE WHEN NEW.outcome = 'failed' THEN coalesce(NEW.error_attr, '') END
   WHERE supplier_id = NEW.supplier_id AND external_account_number = NEW.external_account_number
     AND (last_attempt_id IS NULL OR last_attempt_id < NEW.id);
  RETURN NULL;
END $$;
