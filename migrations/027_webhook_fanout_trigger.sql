-- The webhooks' fan-out is woken by the statement that records events, in the database. The service
-- used to do it after each event-writing statement, from the process: a look for a waiting fan-out
-- job (and a send when there was none) inside the event's transaction. That forced every statement
-- recording events for an organisation with an enabled endpoint into a transaction of its own, with
-- BEGIN, the look and COMMIT as three more round trips, on every staging and every create; this
-- trigger does the same work inside the statement, which commits by itself.
--
-- What it does, once per statement that inserts events: when one of the events' suppliers belongs to
-- an organisation with an enabled endpoint, and no fan-out job is waiting to be taken, it writes one,
-- to start a quarter of a second later (the events of that time find it waiting and write none).
-- Why this loses no event (docs/events.md): its look at the queue runs after the events' insert
-- (PL/pgSQL takes a new snapshot for each of its statements), when the transaction is already known
-- to the database as running; a fan-out that takes the waiting job reads after that, and one that
-- sees transactions running when it reads queues itself again.
--
-- The job queue is pg-boss, in schema `pgboss`: this writes its `job` table directly, as pg-boss's
-- own send does, with the queue's settings from its `queue` table. test/http/webhooks.test.ts
-- compares the job written here with one pg-boss sends, so an upgrade of pg-boss that changes either
-- table fails there. Until a process has opened the queue (its tables exist and the fan-out queue is
-- defined) the trigger writes nothing; the fan-out's every-minute schedule is the backstop.
CREATE FUNCTION wake_webhook_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM recorded_events e
    JOIN import_suppliers s ON s.id = e.supplier_id
    JOIN webhook_endpoints w ON w.organisation_id = s.organisation_id AND w.enabled
  ) THEN
    RETURN NULL;
  END IF;
  IF to_regclass('pgboss.job') IS NULL THEN
    RETURN NULL;
  END IF;
  -- pg-boss's own condition for a job not yet taken (its getQueueSize), on its partial index.
  IF EXISTS (SELECT 1 FROM pgboss.job WHERE name = 'webhook_fanout' AND state < 'active') THEN
    RETURN NULL;
  END IF;
  -- As pg-boss's send fills a job from its queue's settings.
  INSERT INTO pgboss.job (name, data, start_after, expire_in, keep_until, retry_limit, retry_delay, retry_backoff, dead_letter, policy)
  SELECT q.name, '{}'::jsonb, now() + interval '0.25 seconds',
    COALESCE(q.expire_seconds * interval '1 second', interval '15 minutes'),
    now() + interval '0.25 seconds' + COALESCE(q.retention_minutes * interval '1 minute', interval '14 days'),
    COALESCE(q.retry_limit, 2),
    CASE WHEN COALESCE(q.retry_backoff, false) THEN GREATEST(COALESCE(q.retry_delay, 0), 1) ELSE COALESCE(q.retry_delay, 0) END,
    COALESCE(q.retry_backoff, false), q.dead_letter, q.policy
  FROM pgboss.queue q WHERE q.name = 'webhook_fanout';
  RETURN NULL;
END $$;

CREATE TRIGGER events_wake_webhook_fanout AFTER INSERT ON events
  REFERENCING NEW TABLE AS recorded_events FOR EACH STATEMENT EXECUTE FUNCTION wake_webhook_fanout();
