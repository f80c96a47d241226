-- The files listing of one user in multi-user mode reads their own files
-- (files_owner_created) and the files shared with them in the same order:
-- shares carry their file's created_at, kept by triggers, so that an
-- index gives the newest shared files without reading each file. The
-- share's owner_id follows its file's owner, so that the total (own files
-- plus files shared by others) is counted from the two indexes alone.
ALTER TABLE shares ADD COLUMN IF NOT EXISTS file_created_at TIMESTAMPTZ;

CREATE OR REPLACE FUNCTION shares_set_file_created_at() RETURNS trigger AS $$
BEGIN
    NEW.file_created_at := (SELECT created_at FROM files WHERE id = NEW.file_id);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS shares_file_created_at ON shares;
CREATE TRIGGER shares_file_created_at BEFORE INSERT OR UPDATE OF file_id ON shares
    FOR EACH ROW EXECUTE FUNCTION shares_set_file_created_at();

CREATE OR REPLACE FUNCTION files_follow_to_shares() RETURNS trigger AS $$
BEGIN
    UPDATE shares SET file_created_at = NEW.created_at, owner_id = COALESCE(NEW.owner_id, owner_id)
        WHERE file_id = NEW.id;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS files_to_shares ON files;
CREATE TRIGGER files_to_shares AFTER UPDATE OF created_at, owner_id ON files
    FOR EACH ROW WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.owner_id IS DISTINCT FROM NEW.owner_id)
    EXECUTE FUNCTION files_follow_to_shares();

UPDATE shares sh SET file_created_at = f.created_at FROM files f
    WHERE f.id = sh.file_id AND sh.file_created_at IS DISTINCT FROM f.created_at;
ALTER TABLE shares ALTER COLUMN file_created_at SET NOT NULL;

CREATE INDEX IF NOT EXISTS shares_user_created ON shares (shared_with_user_id, file_created_at DESC, file_id DESC)
    INCLUDE (owner_id);
