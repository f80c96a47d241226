-- The tags filter reads files.tags alone, under its GIN index: the column
-- is kept in step with the tags of the AI metadata (the source of truth)
-- by a trigger, so every write agrees, whichever code path makes it
-- (intake with uploaded metadata, the steps, metadata edits, COPY).
-- Only string elements of a JSON array count, as in the Go code.
CREATE OR REPLACE FUNCTION docflow_metadata_tags(meta JSONB) RETURNS TEXT[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(array_agg(t #>> '{}' ORDER BY n), '{}')
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(meta->'tags') = 'array' THEN meta->'tags' ELSE '[]'::jsonb END)
         WITH ORDINALITY AS e(t, n)
    WHERE jsonb_typeof(t) = 'string'
$$;

CREATE OR REPLACE FUNCTION files_sync_tags() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tags := docflow_metadata_tags(NEW.ai_metadata);
    RETURN NEW;
END $$;

-- NOTE: the WHEN clauses keep the common writes (an upload without
-- metadata, a status change) from calling the function at all.
DROP TRIGGER IF EXISTS files_sync_tags_insert ON files;
CREATE TRIGGER files_sync_tags_insert BEFORE INSERT ON files
    FOR EACH ROW WHEN (NEW.ai_metadata ? 'tags' OR cardinality(NEW.tags) > 0)
    EXECUTE FUNCTION files_sync_tags();

DROP TRIGGER IF EXISTS files_sync_tags_update ON files;
CREATE TRIGGER files_sync_tags_update BEFORE UPDATE OF ai_metadata, tags ON files
    FOR EACH ROW WHEN (OLD.ai_metadata IS DISTINCT FROM NEW.ai_metadata OR OLD.tags IS DISTINCT FROM NEW.tags)
    EXECUTE FUNCTION files_sync_tags();

-- Rows written before: intake never copied uploaded tags into the column.
UPDATE files SET tags = docflow_metadata_tags(ai_metadata)
    WHERE tags IS DISTINCT FROM docflow_metadata_tags(ai_metadata);

-- Every lookup by hash asks for the original, which the partial unique
-- index files_one_original answers; files_hash only cost writes.
DROP INDEX IF EXISTS files_hash;
