CREATE TABLE entries (id bigint PRIMARY KEY, account_id bigint NOT NULL REFERENCES accounts (id), amount_cents bigint NOT NULL);
