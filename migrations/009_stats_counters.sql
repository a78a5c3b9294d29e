-- Statistics that stay fast at a million accounts (D14). The counts by state, the accounts created
-- per hour and the size of each error group are counters kept by triggers in the transactions that
-- change them, so the stats endpoint reads a few hundred counter rows instead of counting a
-- supplier's accounts. And an error group's code is the first error's (invalid_phone_number), not
-- the answer's (account_failed_validation).

-- Nothing may write the tables while the counters are created and initialised (a write committed
-- between the count and the trigger would be lost): writers wait for this migration's commit.
LOCK TABLE account_imports, accounts IN SHARE ROW EXCLUSIVE MODE;

-- ---- error groups by the first error's code ----

-- The code of the attempt's first field error, the one error_attr names (invalid_phone_number where
-- error_code is account_failed_validation); NULL when the answer named no field.
ALTER TABLE create_attempts ADD COLUMN error_field_code text;

-- The code a failing account is grouped under: its latest attempt's first field error's code, or the
-- answer's code when it named no field. Attempts recorded before this migration kept no field code:
-- they group under the answer's code until the account's next attempt.
ALTER TABLE account_imports ADD COLUMN last_error_group_code text;

CREATE OR REPLACE FUNCTION create_attempts_track_latest() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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

UPDATE account_imports SET last_error_group_code = coalesce(last_error_code, 'internal_error') WHERE last_attempt_outcome = 'failed';

-- The examples of a group: its first failing accounts by number, one probe of this partial index.
DROP INDEX account_imports_failing_groups_idx;
CREATE INDEX account_imports_failing_groups_idx ON account_imports (supplier_id, last_error_group_code, last_error_attr, external_account_number)
  WHERE account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed';

-- Counts come from the counters below now; nothing reads this index any more.
DROP INDEX account_imports_stats_idx;

-- ---- counters ----

-- Each counter is spread over 16 shard rows, summed on read. A transaction adds to the shard of its
-- transaction id, so concurrent creates rarely wait on one another's counter row. A shard may go
-- below zero (a row counted into one shard and out of another); only the sum means anything.
CREATE FUNCTION stats_counter_shard() RETURNS smallint LANGUAGE sql VOLATILE AS $$ SELECT mod(txid_current(), 16)::smallint $$;

-- staged: not imported, not skipped. imported: account_id set. skipped: not imported, skip mark.
-- failed: staged and the latest create attempt failed.
CREATE TABLE account_import_counts (
  supplier_id  bigint NOT NULL REFERENCES import_suppliers(id),
  shard        smallint NOT NULL,
  staged       bigint NOT NULL DEFAULT 0,
  imported     bigint NOT NULL DEFAULT 0,
  skipped      bigint NOT NULL DEFAULT 0,
  failed       bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (supplier_id, shard)
);

-- The failed accounts above, by (last_error_group_code, last_error_attr). A group that empties
-- keeps its rows (summing to zero) until the next rebuild.
CREATE TABLE account_error_group_counts (
  supplier_id  bigint NOT NULL REFERENCES import_suppliers(id),
  code         text NOT NULL,
  attr         text NOT NULL,
  shard        smallint NOT NULL,
  failed       bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (supplier_id, code, attr, shard)
);

-- Accounts created in each UTC hour (hours since the epoch), by accounts.created_at.
CREATE TABLE accounts_created_per_hour (
  supplier_id  bigint NOT NULL REFERENCES import_suppliers(id),
  hour         bigint NOT NULL,
  shard        smallint NOT NULL,
  created      bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (supplier_id, hour, shard)
);

CREATE FUNCTION account_import_counts_add(p_supplier bigint, p_staged int, p_imported int, p_skipped int, p_failed int)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO account_import_counts AS c (supplier_id, shard, staged, imported, skipped, failed)
  VALUES (p_supplier, stats_counter_shard(), p_staged, p_imported, p_skipped, p_failed)
  ON CONFLICT (supplier_id, shard) DO UPDATE SET staged = c.staged + excluded.staged,
    imported = c.imported + excluded.imported, skipped = c.skipped + excluded.skipped, failed = c.failed + excluded.failed
$$;

CREATE FUNCTION account_error_group_counts_add(p_supplier bigint, p_code text, p_attr text, p_failed int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO account_error_group_counts AS c (supplier_id, code, attr, shard, failed)
  VALUES (p_supplier, coalesce(p_code, 'internal_error'), coalesce(p_attr, ''), stats_counter_shard(), p_failed)
  ON CONFLICT (supplier_id, code, attr, shard) DO UPDATE SET failed = c.failed + excluded.failed
$$;

CREATE FUNCTION account_import_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  staged int := 0; imported int := 0; skipped int := 0; failed int := 0;
  old_failing boolean := false; new_failing boolean := false;
BEGIN
  IF TG_OP <> 'INSERT' THEN
    old_failing := OLD.account_id IS NULL AND NOT OLD.skipped AND OLD.last_attempt_outcome IS NOT DISTINCT FROM 'failed';
    imported := -(OLD.account_id IS NOT NULL)::int;
    staged := -(OLD.account_id IS NULL AND NOT OLD.skipped)::int;
    skipped := -(OLD.account_id IS NULL AND OLD.skipped)::int;
    failed := -old_failing::int;
    IF TG_OP = 'DELETE' OR OLD.supplier_id <> NEW.supplier_id THEN
      PERFORM account_import_counts_add(OLD.supplier_id, staged, imported, skipped, failed);
      staged := 0; imported := 0; skipped := 0; failed := 0;
    END IF;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    new_failing := NEW.account_id IS NULL AND NOT NEW.skipped AND NEW.last_attempt_outcome IS NOT DISTINCT FROM 'failed';
    imported := imported + (NEW.account_id IS NOT NULL)::int;
    staged := staged + (NEW.account_id IS NULL AND NOT NEW.skipped)::int;
    skipped := skipped + (NEW.account_id IS NULL AND NEW.skipped)::int;
    failed := failed + new_failing::int;
    IF staged <> 0 OR imported <> 0 OR skipped <> 0 OR failed <> 0 THEN
      PERFORM account_import_counts_add(NEW.supplier_id, staged, imported, skipped, failed);
    END IF;
  END IF;
  -- A failing account moving from one group to another: the two group rows are updated in key order,
  -- so two such moves in opposite directions cannot deadlock.
  IF old_failing AND new_failing AND (OLD.supplier_id, OLD.last_error_group_code, OLD.last_error_attr)
                                     IS NOT DISTINCT FROM (NEW.supplier_id, NEW.last_error_group_code, NEW.last_error_attr) THEN
    RETURN NULL;
  END IF;
  IF old_failing AND new_failing AND (OLD.supplier_id, OLD.last_error_group_code, OLD.last_error_attr)
                                     > (NEW.supplier_id, NEW.last_error_group_code, NEW.last_error_attr) THEN
    PERFORM account_error_group_counts_add(NEW.supplier_id, NEW.last_error_group_code, NEW.last_error_attr, 1);
    new_failing := false;
  END IF;
  IF old_failing THEN PERFORM account_error_group_counts_add(OLD.supplier_id, OLD.last_error_group_code, OLD.last_error_attr, -1); END IF;
  IF new_failing THEN PERFORM account_error_group_counts_add(NEW.supplier_id, NEW.last_error_group_code, NEW.last_error_attr, 1); END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION accounts_created_per_hour_add(p_supplier bigint, p_at timestamptz, p_created int) RETURNS void LANGUAGE sql AS $$
  INSERT INTO accounts_created_per_hour AS c (supplier_id, hour, shard, created)
  VALUES (p_supplier, floor(extract(epoch FROM p_at) / 3600)::bigint, stats_counter_shard(), p_created)
  ON CONFLICT (supplier_id, hour, shard) DO UPDATE SET created = c.created + excluded.created
$$;

CREATE FUNCTION accounts_created_per_hour_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN PERFORM accounts_created_per_hour_add(OLD.supplier_id, OLD.created_at, -1); END IF;
  IF TG_OP <> 'DELETE' THEN PERFORM accounts_created_per_hour_add(NEW.supplier_id, NEW.created_at, 1); END IF;
  RETURN NULL;
END $$;

-- Deferred constraint triggers: the counter rows are written at commit, so a create holds its shard's
-- row lock for its commit only, not while it writes the account. A rolled-back transaction (a dry run)
-- never writes them. The WHEN of an update is evaluated at once, so an update that changes no state
-- (a re-stage, the same failure again) queues nothing.
CREATE CONSTRAINT TRIGGER account_import_counts_insert_delete AFTER INSERT OR DELETE ON account_imports
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION account_import_counts_track();
CREATE CONSTRAINT TRIGGER account_import_counts_update
  AFTER UPDATE OF supplier_id, account_id, skipped, last_attempt_outcome, last_error_group_code, last_error_attr ON account_imports
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.supplier_id <> NEW.supplier_id OR OLD.account_id IS DISTINCT FROM NEW.account_id OR OLD.skipped <> NEW.skipped
        OR OLD.last_attempt_outcome IS DISTINCT FROM NEW.last_attempt_outcome
        OR OLD.last_error_group_code IS DISTINCT FROM NEW.last_error_group_code OR OLD.last_error_attr IS DISTINCT FROM NEW.last_error_attr)
  EXECUTE FUNCTION account_import_counts_track();
CREATE CONSTRAINT TRIGGER accounts_created_per_hour_insert_delete AFTER INSERT OR DELETE ON accounts
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION accounts_created_per_hour_track();
CREATE CONSTRAINT TRIGGER accounts_created_per_hour_update AFTER UPDATE OF supplier_id, created_at ON accounts
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.supplier_id <> NEW.supplier_id OR OLD.created_at <> NEW.created_at)
  EXECUTE FUNCTION accounts_created_per_hour_track();

-- Recounts every supplier from the rows, should the counters ever be doubted: SELECT rebuild_stats_counters();
-- Writers wait for the transaction that calls it (seconds at a million accounts); readers do not.
CREATE FUNCTION rebuild_stats_counters() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE account_imports, accounts IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM account_import_counts;
  INSERT INTO account_import_counts (supplier_id, shard, staged, imported, skipped, failed)
    SELECT supplier_id, 0,
      count(*) FILTER (WHERE account_id IS NULL AND NOT skipped),
      count(*) FILTER (WHERE account_id IS NOT NULL),
      count(*) FILTER (WHERE account_id IS NULL AND skipped),
      count(*) FILTER (WHERE account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed')
    FROM account_imports GROUP BY supplier_id;
  DELETE FROM account_error_group_counts;
  INSERT INTO account_error_group_counts (supplier_id, code, attr, shard, failed)
    SELECT supplier_id, coalesce(last_error_group_code, 'internal_error'), coalesce(last_error_attr, ''), 0, count(*)
    FROM account_imports WHERE account_id IS NULL AND NOT skipped AND last_attempt_outcome = 'failed' GROUP BY 1, 2, 3;
  DELETE FROM accounts_created_per_hour;
  INSERT INTO accounts_created_per_hour (supplier_id, hour, shard, created)
    SELECT supplier_id, floor(extract(epoch FROM created_at) / 3600)::bigint, 0, count(*)
    FROM accounts GROUP BY 1, 2;
END $$;

SELECT rebuild_stats_counters();
