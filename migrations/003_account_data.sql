-- Data imported onto created accounts: notes, transactions, historical statements, payment instructions.

CREATE TABLE notes (
  id                  bigserial PRIMARY KEY,
  account_id          bigint NOT NULL REFERENCES accounts(id),
  body                text,
  document_paths      jsonb NOT NULL DEFAULT '[]',
  created_at          timestamptz NOT NULL,
  is_pinned           boolean NOT NULL DEFAULT false,
  unpin_at            timestamptz,
  inserted_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notes_account_body_idx ON notes (account_id, md5(coalesce(body, '')));

CREATE TABLE transactions (
  id                bigserial PRIMARY KEY,
  account_id        bigint NOT NULL REFERENCES accounts(id),
  transaction_id    text NOT NULL,
  transaction_date  date NOT NULL,
  original_date     date,
  amount            numeric(14, 2) NOT NULL,
  type              text NOT NULL,
  reason            text,
  display_note      text,
  note              text,
  reference         text,
  payment_type      text,
  product_code      text,
  line_items        jsonb,
  tax_items         jsonb,
  description       text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, transaction_id)
);

CREATE TABLE statements (
  id                     bigserial PRIMARY KEY,
  account_id             bigint NOT NULL REFERENCES accounts(id),
  statement_id           text NOT NULL,
  bill_period_from_date  date NOT NULL,
  bill_period_to_date    date NOT NULL,
  issued_date            date NOT NULL,
  number                 text NOT NULL,
  gross_amount           numeric(14, 2) NOT NULL,
  statement_path         text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account_id, statement_id)
);
CREATE INDEX statements_account_period_idx ON statements (account_id, bill_period_to_date);

-- Only the vendor's non-sensitive details are kept (never a full card number).
CREATE TABLE payment_instructions (
  id          bigserial PRIMARY KEY,
  account_id  bigint NOT NULL REFERENCES accounts(id),
  vendor_id   bigint NOT NULL REFERENCES payment_vendors(id),
  reference   text NOT NULL,
  type        text NOT NULL,
  status      text,
  details     jsonb NOT NULL DEFAULT '{}',
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX payment_instructions_active_key ON payment_instructions (account_id) WHERE active;
