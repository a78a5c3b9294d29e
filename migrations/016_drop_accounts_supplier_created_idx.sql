-- accounts_supplier_created_idx (007) served the "accounts created per hour" statistic, which has read
-- the accounts_created_per_hour counters since 009 (its rebuild reads the whole table). Nothing reads
-- accounts by supplier and time any more, so the index only cost every account insert a write; and
-- it made the generic plan of the imports' account lock (supplier_id = $1 AND external_account_number
-- = $2) a tie with the unique key on a small table, so that lock could not be prepared.
DROP INDEX IF EXISTS accounts_supplier_created_idx;
