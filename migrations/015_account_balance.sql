-- An account's balance, kept on the account as its transactions are written. The bound on it
-- (issue #14) was checked at every import by summing every transaction the account holds, so a
-- batch cost more the longer the account's history: an account taking batches of 500 had summed
-- 50,000 rows by its hundredth. The import reads this column instead, from the account row it holds
-- locked, so the balance it checks is the one its own insert then moves. Plain numeric, like the sum
-- it replaces: balances stored before the bound still fit. The backfill reads every transaction
-- once, so on a big book the first start of this version takes a little longer.

-- What a transaction does to its account's balance: CREDIT and PAYMENT add, every other type takes
-- away. The one statement of that convention: the trigger below, the backfill and the service's
-- sums all use it (a SQL function of one expression, which the planner inlines).
CREATE FUNCTION transaction_balance_delta(type text, amount numeric) RETURNS numeric
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN type IN ('CREDIT', 'PAYMENT') THEN amount ELSE -amount END $$;

ALTER TABLE accounts ADD COLUMN balance numeric NOT NULL DEFAULT 0;

UPDATE accounts AS a SET balance = t.balance
  FROM (SELECT account_id, sum(transaction_balance_delta(type, amount)) AS balance FROM transactions GROUP BY account_id) AS t
 WHERE t.account_id = a.id;

-- Once per statement, over the rows it wrote (its transition tables), whatever wrote them. An
-- INSERT has no old rows and a DELETE no new ones, so each side is read only where it exists.
CREATE FUNCTION transactions_move_balance() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    UPDATE accounts AS a SET balance = a.balance + d.delta
      FROM (SELECT account_id, sum(transaction_balance_delta(type, amount)) AS delta FROM new_rows GROUP BY account_id) AS d
     WHERE a.id = d.account_id;
  END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    UPDATE accounts AS a SET balance = a.balance - d.delta
      FROM (SELECT account_id, sum(transaction_balance_delta(type, amount)) AS delta FROM old_rows GROUP BY account_id) AS d
     WHERE a.id = d.account_id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER transactions_balance_insert AFTER INSERT ON transactions
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION transactions_move_balance();
CREATE TRIGGER transactions_balance_update AFTER UPDATE ON transactions
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION transactions_move_balance();
CREATE TRIGGER transactions_balance_delete AFTER DELETE ON transactions
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION transactions_move_balance();
