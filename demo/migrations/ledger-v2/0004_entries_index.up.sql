CREATE INDEX entries_account_id ON entries (account_id);
