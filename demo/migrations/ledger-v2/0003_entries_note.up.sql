ALTER TABLE entries ADD COLUMN note text;
