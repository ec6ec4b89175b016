-- A long backfill: the whole migration is one transaction, and it runs for
-- twenty seconds, long enough to lose its Pod in the middle of it.
CREATE TABLE balances (account_id bigint PRIMARY KEY REFERENCES accounts (id), cents bigint NOT NULL);
SELECT pg_sleep(20);
