-- Events (D13): written in the same transaction as the change they report, so a rolled-back change
-- has none and a committed one always has.
--
-- The feed's order is (xid, id), not id alone: a bigserial is drawn when the row is inserted, not
-- when its transaction commits, so under concurrency an event with a smaller id can become visible
-- after a reader has already paged past a larger one. `xid` is the writing transaction's id; the
-- feed only returns events whose transaction is older than every transaction still running
-- (pg_snapshot_xmin of the reader's snapshot), and everything committed later has a larger xid.
-- docs/events.md explains the choice.
CREATE TABLE events (
  id                       bigserial PRIMARY KEY,
  xid                      xid8 NOT NULL DEFAULT pg_current_xact_id(),
  supplier_id              bigint NOT NULL REFERENCES import_suppliers(id),
  type                     text NOT NULL,
  external_account_number  text,
  data                     jsonb NOT NULL DEFAULT '{}',
  created_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_feed_idx ON events (supplier_id, xid, id);
CREATE INDEX events_order_idx ON events (xid, id);
CREATE INDEX events_created_at_idx ON events (created_at);
