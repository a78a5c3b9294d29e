-- Refresh tokens rotate on use (issue #14): each one issued has a row, keyed by its JWT id. Trading
-- one marks it used and issues its successor in the same family; presenting a used one again means
-- two parties hold the family (a thief and the owner), so every token of the family is revoked.
-- Kept in the store so that rotation and reuse detection hold across instances and restarts.
-- Rows past expires_at are deleted as new ones are issued: an expired token fails before its row
-- is looked up.
CREATE TABLE refresh_tokens (
  jti         text PRIMARY KEY,
  family_id   text NOT NULL,
  api_key_id  bigint NOT NULL REFERENCES api_keys(id),
  issued_at   timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX refresh_tokens_family_idx ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_expires_idx ON refresh_tokens (expires_at);
