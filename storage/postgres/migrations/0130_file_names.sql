-- Filename search reads a narrow table rather than files: each file's
-- lower-cased name (C collation, so LIKE compares bytes) beside the
-- columns the usual filters and the default sort read. A search then
-- rechecks and filters short rows packed many to a page, instead of wide
-- records whose name sat in their last column. Triggers keep it in step
-- with files, in the same transaction as each write.
CREATE TABLE IF NOT EXISTS file_names (
    id         BIGINT PRIMARY KEY,
    name_key   TEXT COLLATE "C" NOT NULL,
    status     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    owner_id   TEXT
);

INSERT INTO file_names (id, name_key, status, created_at, owner_id)
    SELECT id, lower(original_filename), status, created_at, owner_id FROM files
    ON CONFLICT (id) DO NOTHING;

CREATE INDEX IF NOT EXISTS file_names_name_trgm ON file_names USING GIN (name_key gin_trgm_ops);
DROP INDEX IF EXISTS files_name_key_trgm;
ALTER TABLE files DROP COLUMN IF EXISTS name_key;

-- Inserts and deletes are handled per statement (a bulk delete is one
-- statement), updates per row and only when a copied column changed.
-- An insert overwrites a name already there, as when a dump restores
-- file_names before files.
CREATE OR REPLACE FUNCTION file_names_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO file_names (id, name_key, status, created_at, owner_id)
        SELECT id, lower(original_filename), status, created_at, owner_id FROM new_files
        ON CONFLICT (id) DO UPDATE SET name_key = EXCLUDED.name_key, status = EXCLUDED.status,
            created_at = EXCLUDED.created_at, owner_id = EXCLUDED.owner_id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION file_names_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE file_names SET name_key = lower(NEW.original_filename), status = NEW.status,
        created_at = NEW.created_at, owner_id = NEW.owner_id
        WHERE id = NEW.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION file_names_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM file_names n USING old_files o WHERE n.id = o.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION file_names_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE file_names;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS file_names_insert ON files;
CREATE TRIGGER file_names_insert AFTER INSERT ON files
    REFERENCING NEW TABLE AS new_files
    FOR EACH STATEMENT EXECUTE FUNCTION file_names_insert();

DROP TRIGGER IF EXISTS file_names_update ON files;
CREATE TRIGGER file_names_update AFTER UPDATE OF original_filename, status, created_at, owner_id ON files
    FOR EACH ROW
    WHEN (OLD.original_filename IS DISTINCT FROM NEW.original_filename OR OLD.status IS DISTINCT FROM NEW.status
          OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.owner_id IS DISTINCT FROM NEW.owner_id)
    EXECUTE FUNCTION file_names_update();

DROP TRIGGER IF EXISTS file_names_delete ON files;
CREATE TRIGGER file_names_delete AFTER DELETE ON files
    REFERENCING OLD TABLE AS old_files
    FOR EACH STATEMENT EXECUTE FUNCTION file_names_delete();

DROP TRIGGER IF EXISTS file_names_truncate ON files;
CREATE TRIGGER file_names_truncate AFTER TRUNCATE ON files
    FOR EACH STATEMENT EXECUTE FUNCTION file_names_truncate();
