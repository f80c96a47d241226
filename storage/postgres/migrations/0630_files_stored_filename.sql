-- The spec's send-to-cloud routes name a document by file_path, which
-- docflow resolves by the stored file name its uploads answer with
-- (stored_filename): looked up by this index.
CREATE INDEX IF NOT EXISTS files_stored_filename ON files (stored_filename);
