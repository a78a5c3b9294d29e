-- Failed authentications at POST /graphql (obtainToken), counted per client address and per API key
-- prefix in 10-second buckets, in the store so that every instance sees the same counts: a client
-- that spreads its guesses over several instances is throttled all the same. Rows older than an
-- hour are deleted as new failures arrive.
CREATE TABLE auth_failures (
  scope text NOT NULL CHECK (scope IN ('address', 'key_prefix')),
  subject text NOT NULL,
  bucket timestamptz NOT NULL,
  failures integer NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, subject, bucket)
);
CREATE INDEX auth_failures_bucket_idx ON auth_failures (bucket);
