-- Organisations, their API keys, the token signing key, suppliers and operations teams.
CREATE TABLE organisations (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Keys are shown once; only a SHA-256 of the secret is kept. The prefix identifies a key to revoke it.
CREATE TABLE api_keys (
  id               bigserial PRIMARY KEY,
  organisation_id  bigint NOT NULL REFERENCES organisations(id),
  prefix           text NOT NULL UNIQUE,
  secret_hash      text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  revoked_at       timestamptz
);
CREATE INDEX api_keys_organisation_idx ON api_keys (organisation_id);

-- Instance-wide settings shared by every process over this store (the token signing key lives here
-- unless TOKEN_SECRET is configured), so tokens survive restarts and work on every instance.
CREATE TABLE settings (
  name   text PRIMARY KEY,
  value  text NOT NULL
);

CREATE TABLE import_suppliers (
  id               bigserial PRIMARY KEY,
  code             text NOT NULL UNIQUE,
  organisation_id  bigint NOT NULL REFERENCES organisations(id),
  status           text NOT NULL DEFAULT 'ongoing' CHECK (status IN ('ongoing', 'paused', 'complete')),
  customer_emails  boolean NOT NULL DEFAULT false,
  documents_root   text NOT NULL DEFAULT '',
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE operations_teams (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE payment_vendors (
  id          bigserial PRIMARY KEY,
  code        text NOT NULL UNIQUE,
  kind        text NOT NULL,
  url         text NOT NULL,
  secret      text,
  timeout_ms  integer NOT NULL DEFAULT 5000,
  created_at  timestamptz NOT NULL DEFAULT now()
);
