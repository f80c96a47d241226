-- Blob reference lookups: deleting a file removes its blobs only when no
-- other record still uses them, which must not scan the table.
CREATE INDEX IF NOT EXISTS files_original_blob ON files (original_blob) WHERE original_blob <> '';
CREATE INDEX IF NOT EXISTS files_processed_blob ON files (processed_blob) WHERE processed_blob <> '';
