-- Staged account data and the accounts created from it.

-- One row per (supplier, external account number): the import process. `data` is the validated
-- payload as last staged. account_id is set, in the creating transaction, once an account exists.
CREATE TABLE account_imports (
  id                       bigserial PRIMARY KEY,
  supplier_id              bigint NOT NULL REFERENCES import_suppliers(id),
  external_account_number  text NOT NULL,
  data                     jsonb NOT NULL,
  staged_at                timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  skipped                  boolean NOT NULL DEFAULT false,
  account_id               bigint,
  UNIQUE (supplier_id, external_account_number)
);
-- Keyset order of the list endpoints (D7): staging time, then external account number.
CREATE INDEX account_imports_all_idx ON account_imports (supplier_id, staged_at, external_account_number);
CREATE INDEX account_imports_pending_idx ON account_imports (supplier_id, staged_at, external_account_number)
  WHERE account_id IS NULL;
CREATE INDEX account_imports_imported_idx ON account_imports (supplier_id, staged_at, external_account_number)
  WHERE account_id IS NOT NULL;

CREATE TABLE accounts (
  id                        bigserial PRIMARY KEY,
  number                    text NOT NULL UNIQUE,
  account_import_id         bigint NOT NULL UNIQUE REFERENCES account_imports(id),
  supplier_id               bigint NOT NULL REFERENCES import_suppliers(id),
  external_account_number   text NOT NULL,
  operations_team_id        bigint NOT NULL REFERENCES operations_teams(id),
  billing_street_address    text NOT NULL,
  billing_locality          text,
  billing_administrative_area text,
  billing_country           text NOT NULL,
  billing_postal_code       text NOT NULL,
  unknown_occupier          boolean,
  metadata                  jsonb NOT NULL DEFAULT '[]',
  created_at                timestamptz NOT NULL DEFAULT now(),
  UNIQUE (supplier_id, external_account_number)
);
ALTER TABLE account_imports ADD CONSTRAINT account_imports_account_fk FOREIGN KEY (account_id) REFERENCES accounts(id);

CREATE TABLE customers (
  id                         bigserial PRIMARY KEY,
  account_id                 bigint NOT NULL REFERENCES accounts(id),
  position                   integer NOT NULL,
  given_name                 text NOT NULL,
  family_name                text NOT NULL,
  email                      text,
  mobile                     text,
  landline                   text,
  alternative_phone_numbers  jsonb NOT NULL DEFAULT '[]',
  date_of_birth              date,
  opted_into_updates         boolean,
  opted_into_offers          boolean,
  opted_into_sms             boolean,
  UNIQUE (account_id, position)
);

CREATE TABLE supply_addresses (
  id                                    bigserial PRIMARY KEY,
  account_id                            bigint NOT NULL REFERENCES accounts(id),
  position                              integer NOT NULL,
  supply_address1                       text NOT NULL,
  supply_address2                       text,
  supply_address3                       text,
  supply_address4                       text,
  supply_postcode                       text NOT NULL,
  customer_at_supply_address_from_date  date,
  UNIQUE (account_id, position)
);

-- Fields common to every kind are columns; the kind's own fields (spec 2.3) are kept in `details`.
CREATE TABLE supply_points (
  id                   bigserial PRIMARY KEY,
  account_id           bigint NOT NULL REFERENCES accounts(id),
  supply_address_id    bigint NOT NULL REFERENCES supply_addresses(id),
  position             integer NOT NULL,
  supply_type          text NOT NULL,
  supply_start_date    date NOT NULL,
  last_billed_to_date  date,
  identifier           text,
  details              jsonb NOT NULL DEFAULT '{}',
  UNIQUE (supply_address_id, position)
);
CREATE INDEX supply_points_account_idx ON supply_points (account_id);
-- An electricity identifier is live on at most one account.
CREATE UNIQUE INDEX supply_points_identifier_key ON supply_points (identifier) WHERE identifier IS NOT NULL;

CREATE TABLE agreements (
  id               bigserial PRIMARY KEY,
  supply_point_id  bigint NOT NULL REFERENCES supply_points(id),
  position         integer NOT NULL,
  tariff_code      text NOT NULL,
  effective_from   date NOT NULL
);
CREATE INDEX agreements_supply_point_idx ON agreements (supply_point_id);

CREATE TABLE meters (
  id               bigserial PRIMARY KEY,
  supply_point_id  bigint NOT NULL REFERENCES supply_points(id),
  position         integer NOT NULL,
  serial_number    text NOT NULL,
  subgroup         integer,
  seal_date        date,
  meter_number     integer,
  status           text,
  active_from      date,
  meter_type       jsonb
);
CREATE INDEX meters_supply_point_idx ON meters (supply_point_id);

CREATE TABLE registers (
  id              bigserial PRIMARY KEY,
  meter_id        bigint NOT NULL REFERENCES meters(id),
  position        integer NOT NULL,
  register_type   text NOT NULL,
  whole_digits    integer,
  decimal_digits  integer,
  active_from     date,
  multiplier      numeric
);
CREATE INDEX registers_meter_idx ON registers (meter_id);

CREATE TABLE transfer_readings (
  id               bigserial PRIMARY KEY,
  supply_point_id  bigint NOT NULL REFERENCES supply_points(id),
  position         integer NOT NULL,
  register_type    text NOT NULL,
  read_date        date NOT NULL,
  value            numeric NOT NULL
);
CREATE INDEX transfer_readings_supply_point_idx ON transfer_readings (supply_point_id);

-- Every create attempt, kept outside the creating transaction so failures are recorded too.
CREATE TABLE create_attempts (
  id                       bigserial PRIMARY KEY,
  supplier_id              bigint NOT NULL REFERENCES import_suppliers(id),
  external_account_number  text NOT NULL,
  dry_run                  boolean NOT NULL,
  outcome                  text NOT NULL CHECK (outcome IN ('created', 'dry_run_rolled_back', 'failed')),
  error_code               text,
  error_detail             text,
  started_at               timestamptz NOT NULL,
  finished_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX create_attempts_account_idx ON create_attempts (supplier_id, external_account_number, id);

-- Welcome emails queued in the creating transaction and delivered by the outbox sender.
CREATE TABLE outbox_emails (
  id               bigserial PRIMARY KEY,
  account_id       bigint NOT NULL REFERENCES accounts(id),
  recipient        text NOT NULL,
  subject          text NOT NULL,
  body             text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  last_error       text,
  sent_at          timestamptz
);
CREATE INDEX outbox_emails_due_idx ON outbox_emails (next_attempt_at) WHERE sent_at IS NULL;
