-- Webhook endpoints can be disabled and enabled again by the service team (import-admin webhook
-- disable|enable), not only disabled by a 410. An endpoint receives the events recorded since it was
-- last enabled (at creation: since it was created), never those recorded while it was disabled:
-- which events those are must not depend on how far the fan-out had got when it was enabled again.
ALTER TABLE webhook_endpoints ADD COLUMN enabled_at timestamptz;
UPDATE webhook_endpoints SET enabled_at = created_at;
ALTER TABLE webhook_endpoints ALTER COLUMN enabled_at SET NOT NULL, ALTER COLUMN enabled_at SET DEFAULT now();
