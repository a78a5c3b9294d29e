-- Webhook endpoints managed by the supplier over the API (docs/events.md, "Managing endpoints over the API").
--
-- A description of the supplier's own, and secret rotation: the secret replaced by a rotation goes on
-- signing beside the new one until previous_secret_expires_at (24 hours later), so a receiver can
-- switch secrets without losing a delivery. The expiry is a stored time, compared with the time of
-- each delivery: moving it (tests, an operator ending the overlap early) needs no restart.
ALTER TABLE webhook_endpoints
  ADD COLUMN description                text,
  ADD COLUMN previous_secret            text,
  ADD COLUMN previous_secret_expires_at timestamptz,
  ADD CONSTRAINT webhook_endpoints_previous_secret_expiry
    CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL));

-- A test ping (POST webhook-endpoints/<id>/test/) is an event of no supplier: it is delivered to one
-- endpoint only, is never in a supplier's feed (the feed reads by supplier) and is never fanned out
-- (the fan-out reads events joined to their supplier). Only a ping may lack a supplier.
ALTER TABLE events ALTER COLUMN supplier_id DROP NOT NULL,
  ADD CONSTRAINT events_supplier_unless_ping CHECK (supplier_id IS NOT NULL OR type = 'ping');

-- The delivery log names each attempt's event type itself: an attempt's row can outlive its event by
-- up to a day of retries (retention removes events and log rows by their own times). Rows logged
-- before this migration take it from their event; those whose event is already gone are older than
-- the retention period and would be removed by the next retention run: they are removed now.
ALTER TABLE webhook_deliveries ADD COLUMN event_type text;
UPDATE webhook_deliveries AS d SET event_type = e.type FROM events AS e WHERE e.id = d.event_id;
DELETE FROM webhook_deliveries WHERE event_type IS NULL;
ALTER TABLE webhook_deliveries ALTER COLUMN event_type SET NOT NULL;

-- An endpoint's log, newest first, paged by id (GET webhook-endpoints/<id>/deliveries/).
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id);
