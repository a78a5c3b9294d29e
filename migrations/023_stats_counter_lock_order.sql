-- The counter rows of a transaction's shard are locked at its commit, one trigger after another, in
-- the order its writes were made. A job's chunk stages before it creates (the supplier's state
-- counter, then the hourly one); a create on its own inserts the account before it marks the staging
-- (the hourly counter, then the state counter). Two such commits on the same shard (one time in
-- sixteen) could each hold the row the other needed: PostgreSQL then rolled one back as a deadlock.
-- The hourly counter now takes the state counter's row of its shard first (creating it if the
-- supplier has none there yet), so every transaction locks the two in the same order. The lock is
-- free when the transaction holds it already, as a chunk does.
CREATE OR REPLACE FUNCTION accounts_created_per_hour_add(p_supplier bigint, p_at timestamptz, p_created int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM account_import_counts WHERE supplier_id = p_supplier AND shard = stats_counter_shard() FOR UPDATE;
  IF NOT FOUND THEN PERFORM account_import_counts_add(p_supplier, 0, 0, 0, 0); END IF;
  INSERT INTO accounts_created_per_hour AS c (supplier_id, hour, shard, created)
  VALUES (p_supplier, floor(extract(epoch FROM p_at) / 3600)::bigint, stats_counter_shard(), p_created)
  ON CONFLICT (supplier_id, hour, shard) DO UPDATE SET created = c.created + excluded.created;
END $$;
