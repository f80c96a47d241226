-- Filename search reads a lower-cased copy of the name kept in the C
-- collation: LIKE then compares bytes, where lower() on every candidate row
-- cost about as much as reading the row.
ALTER TABLE files ADD COLUMN IF NOT EXISTS name_key text COLLATE "C"
    GENERATED ALWAYS AS (lower(original_filename)) STORED;
CREATE INDEX IF NOT EXISTS files_name_key_trgm ON files USING GIN (name_key gin_trgm_ops);
DROP INDEX IF EXISTS files_name_trgm;
-- Filename searches choose what the index reads from a sample of names
-- (storage/postgres/namesearch.go), read with SYSTEM_ROWS.
CREATE EXTENSION IF NOT EXISTS tsm_system_rows;
