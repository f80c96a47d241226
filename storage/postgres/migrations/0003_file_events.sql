-- Changes to a completed document outside a pipeline run (metadata edits,
-- owner, shares) and deletions announce themselves on the events topic, so
-- the search indexer re-indexes or removes them. Written by triggers so that
-- every code path that changes a file, now and later, writes the outbox row
-- in the same transaction as the change.
--
-- The payload is the streams envelope (version 1) around a docflow.Event:
-- {"v":1,"type":"event","id":…,"ts":…,"data":{"id","event","timestamp","owner_id","data":{"file_id"}}}

CREATE FUNCTION docflow_file_event(p_name TEXT, p_file_id BIGINT, p_owner TEXT) RETURNS void AS $$
DECLARE
    evt_id TEXT := 'evt_' || substr(md5(random()::text || clock_timestamp()::text), 1, 24);
    ts     TEXT := to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
BEGIN
    INSERT INTO outbox (topic, key, payload)
    VALUES ('docflow.events', p_file_id::text, convert_to(json_build_object(
        'v', 1, 'type', 'event', 'id', evt_id, 'ts', ts,
        'data', json_build_object('id', evt_id, 'event', p_name, 'timestamp', ts,
                                  'owner_id', p_owner,
                                  'data', json_build_object('file_id', p_file_id)))::text, 'UTF8'));
END;
$$ LANGUAGE plpgsql;

CREATE FUNCTION files_changed() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM docflow_file_event('file.deleted', OLD.id, OLD.owner_id);
        RETURN NULL;
    END IF;
    -- Only a document that is already indexed (completed) and stays so: a
    -- run's own changes end with document.processed instead.
    IF OLD.status = 'completed' AND NEW.status = 'completed' AND (
           OLD.owner_id IS DISTINCT FROM NEW.owner_id
        OR OLD.document_title IS DISTINCT FROM NEW.document_title
        OR OLD.ai_metadata IS DISTINCT FROM NEW.ai_metadata
        OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.language IS DISTINCT FROM NEW.language
        OR OLD.original_filename IS DISTINCT FROM NEW.original_filename) THEN
        PERFORM docflow_file_event('file.updated', NEW.id, NEW.owner_id);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER files_changed AFTER UPDATE OR DELETE ON files
    FOR EACH ROW EXECUTE FUNCTION files_changed();

-- Shares change who may see a document.
CREATE FUNCTION shares_changed() RETURNS trigger AS $$
DECLARE
    fid BIGINT;
BEGIN
    IF TG_OP = 'DELETE' THEN fid := OLD.file_id; ELSE fid := NEW.file_id; END IF;
    IF TG_OP = 'UPDATE' AND OLD.shared_with_user_id = NEW.shared_with_user_id THEN
        RETURN NULL; -- a role change does not change visibility
    END IF;
    PERFORM docflow_file_event('file.updated', f.id, f.owner_id)
    FROM files f WHERE f.id = fid AND f.status = 'completed';
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER shares_changed AFTER INSERT OR UPDATE OR DELETE ON shares
    FOR EACH ROW EXECUTE FUNCTION shares_changed();
