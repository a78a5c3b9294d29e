-- Webhooks (D13): endpoints an organisation's events are POSTed to, the log of every delivery
-- attempt, and the fan-out's place in the event feed.
--
-- The secret is kept as given (whsec_…): signing needs it, so it cannot be a hash like an API key's.
-- event_types NULL means every type. A disabled endpoint (a 410 answer) keeps its row and says why.
CREATE TABLE webhook_endpoints (
  id               text PRIMARY KEY,
  organisation_id  bigint NOT NULL REFERENCES organisations(id),
  url              text NOT NULL,
  event_types      text[],
  secret           text NOT NULL,
  enabled          boolean NOT NULL DEFAULT true,
  disabled_reason  text,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_organisation_idx ON webhook_endpoints (organisation_id) WHERE enabled;

-- One row per HTTP attempt (or refused attempt). The unique key lets a delivery job that ran again
-- after a crash see that its attempt was already made, instead of making it twice.
CREATE TABLE webhook_deliveries (
  id           bigserial PRIMARY KEY,
  endpoint_id  text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id     bigint NOT NULL,
  attempt      integer NOT NULL,
  status_code  integer,
  latency_ms   integer,
  error        text,
  at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (endpoint_id, event_id, attempt)
);
CREATE INDEX webhook_deliveries_at_idx ON webhook_deliveries (at);

-- The fan-out's cursor: the feed position (xid, id) of the last event it turned into delivery jobs.
-- One row; NULL position = from the oldest event kept. It starts at the newest event of today (no
-- endpoint exists yet to want the older ones). Locked FOR UPDATE by the fan-out, so two instances
-- never fan out the same event twice.
CREATE TABLE webhook_fanout_cursor (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  xid        xid8,
  event_id   bigint
);
INSERT INTO webhook_fanout_cursor (singleton, xid, event_id)
  SELECT true, e.xid, e.id FROM (SELECT NULL) AS one
  LEFT JOIN LATERAL (SELECT xid, id FROM events ORDER BY xid DESC, id DESC LIMIT 1) AS e ON true;
