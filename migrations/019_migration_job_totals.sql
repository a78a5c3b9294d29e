-- Reconciliation: what a job's file holds, kept while it is uploaded, beside the legacy system's own
-- figures for the book. Each upload batch adds its lines' measures and moves the hash in the batch's
-- own transaction, so an upload cut off and resumed counts every kept line once and no other.
ALTER TABLE migration_jobs
  -- The legacy figures as sent at creation: counts as numbers, money as decimal strings.
  ADD COLUMN control_totals jsonb NOT NULL DEFAULT '{}',
  -- The API key of the first upload (the report names who uploaded the file).
  ADD COLUMN uploaded_by bigint REFERENCES api_keys(id),
  -- The SHA-256 of the stored lines (each with its newline), as a resumable state (resumable-sha256.ts);
  -- null before the first line. Two uploads running at once interleave their batches, so no hash of
  -- "the file" exists: the job then shows none.
  ADD COLUMN upload_sha256_state text,
  ADD COLUMN upload_sha256_overlapped boolean NOT NULL DEFAULT false,
  ADD COLUMN file_unparsable_lines integer NOT NULL DEFAULT 0,
  ADD COLUMN file_accounts bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_customers bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_supply_points bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_meters bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_statements bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_transactions bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_notes bigint NOT NULL DEFAULT 0,
  ADD COLUMN file_payment_instructions bigint NOT NULL DEFAULT 0,
  -- Money in numeric, exactly as the records' amounts were stored (jsonb numbers are numeric).
  ADD COLUMN file_balance_total numeric NOT NULL DEFAULT 0,
  ADD COLUMN file_statements_gross_total numeric NOT NULL DEFAULT 0;

-- A value's items when it is an array, none otherwise: the measures below read records that have not
-- been validated yet (a record with a string where a list belongs is counted as having no items).
CREATE FUNCTION jsonb_items_of(value jsonb) RETURNS SETOF jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT jsonb_array_elements(CASE jsonb_typeof(value) WHEN 'array' THEN value ELSE '[]'::jsonb END) $$;

-- The one statement of what a record line holds, measure by measure: the upload adds these to the
-- job, and reconciliation sets them beside what the store holds. One line is one account of the book,
-- whether or not it could be read; a line that could not be read (null) holds nothing else. Money is
-- a number the parse kept exactly (record-line.ts refuses others), so its numeric here is the amount
-- sent; an amount that is not a number counts in no sum.
CREATE FUNCTION migration_record_file_measures(record jsonb,
  OUT accounts integer, OUT customers integer, OUT supply_points integer, OUT meters integer, OUT statements integer,
  OUT transactions integer, OUT notes integer, OUT payment_instructions integer,
  OUT balance_total numeric, OUT statements_gross_total numeric)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 1,
    (SELECT count(*)::integer FROM jsonb_items_of(record->'account'->'customers')),
    (SELECT count(*)::integer FROM jsonb_items_of(record->'account'->'supply_addresses') AS sa(v), jsonb_items_of(sa.v->'supply_points')),
    (SELECT count(*)::integer FROM jsonb_items_of(record->'account'->'supply_addresses') AS sa(v),
       jsonb_items_of(sa.v->'supply_points') AS sp(v), jsonb_items_of(sp.v->'meters')),
    (SELECT count(*)::integer FROM jsonb_items_of(record->'statements')),
    (SELECT count(*)::integer FROM jsonb_items_of(record->'transactions')),
    (SELECT count(*)::integer FROM jsonb_items_of(record->'notes')),
    COALESCE(jsonb_typeof(record->'payment_instruction') = 'object', false)::integer,
    (SELECT COALESCE(sum(transaction_balance_delta(t.v->>'type', (t.v->>'amount')::numeric)), 0)
       FROM jsonb_items_of(record->'transactions') AS t(v) WHERE jsonb_typeof(t.v->'amount') = 'number'),
    (SELECT COALESCE(sum((s.v->>'gross_amount')::numeric), 0)
       FROM jsonb_items_of(record->'statements') AS s(v) WHERE jsonb_typeof(s.v->'gross_amount') = 'number')
$$;

-- Jobs uploaded before this version: their totals from their stored lines, once. Their hash cannot be
-- made (blank lines and lines too long to keep are gone), so they show none.
UPDATE migration_jobs AS j SET upload_sha256_overlapped = true,
    file_unparsable_lines = t.unparsable, file_accounts = t.accounts, file_customers = t.customers,
    file_supply_points = t.supply_points, file_meters = t.meters, file_statements = t.statements,
    file_transactions = t.transactions, file_notes = t.notes, file_payment_instructions = t.payment_instructions,
    file_balance_total = t.balance_total, file_statements_gross_total = t.statements_gross_total
  FROM (SELECT r.job_id, count(*) FILTER (WHERE r.record IS NULL) AS unparsable, sum(m.accounts) AS accounts,
          sum(m.customers) AS customers, sum(m.supply_points) AS supply_points, sum(m.meters) AS meters,
          sum(m.statements) AS statements, sum(m.transactions) AS transactions, sum(m.notes) AS notes,
          sum(m.payment_instructions) AS payment_instructions, sum(m.balance_total) AS balance_total,
          sum(m.statements_gross_total) AS statements_gross_total
        FROM migration_job_records AS r CROSS JOIN LATERAL migration_record_file_measures(r.record) AS m
        GROUP BY r.job_id) AS t
 WHERE t.job_id = j.id;
