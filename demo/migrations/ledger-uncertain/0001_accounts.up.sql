CREATE TABLE accounts (id bigint PRIMARY KEY, owner text NOT NULL);
