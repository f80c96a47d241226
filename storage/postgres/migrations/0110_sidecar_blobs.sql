-- The metadata sidecar embed_metadata stores is a blob too: deleting a file
-- removes it when no other record names it, which must not scan the table.
CREATE INDEX IF NOT EXISTS files_sidecar_blob ON files ((ai_metadata->>'metadata_sidecar'))
    WHERE ai_metadata ? 'metadata_sidecar';
