-- A long backfill: the whole migration is one transaction, and it runs for
-- half a minute, long enough to lose its Pod in the middle of it.
CREATE TABLE balances (account_id bigint PRIMARY KEY REFERENCES accounts (id), cents bigint NOT NULL);
SELECT pg_sleep(30);
