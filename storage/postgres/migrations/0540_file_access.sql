-- What each user sees in multi-user mode, one row per (user, file): their
-- own files and the files others shared with them, with the columns a
-- listing shows. One user's files listing is then one index-only scan of
-- file_access_user, as the single-user listing is one scan of
-- files_created.
--
-- NOTE: before this, the listing merged two ordered halves, own files
-- (files_owner_created) and shared ones (shares_user_created joined to
-- files). Each half read only the rows that reached the page, but the plan
-- itself (a Merge Append over two subquery scans, limits and three index
-- scans) cost PostgreSQL 150,000 more instructions per request to set up
-- and tear down than one index scan, whatever the data: 476,000 against
-- 295,000 now (callgrind, a page of 25 with its total and run summary;
-- the single-user page costs 240,000).
--
-- The price is paid on writes: a file's row here follows every change of
-- a listed column (its status changes about twice per document), and a
-- share adds or removes a row. Measured the same way: an owned file's
-- insert costs 88,000 instructions more (590,000 in all), a status change
-- about 300,000 more (about 0.1 ms); files without an owner skip it. Triggers keep it in the transaction of each write,
-- whichever process makes it, as visible_file_counts (migration 0500).
-- The rule is the listing's: a user sees a file they own, and a file
-- shared with them by someone else (shares.owner_id, which follows the
-- file's owner); a file both owned and shared is listed once.
LOCK TABLE files, shares IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE IF NOT EXISTS file_access (
    user_id           TEXT NOT NULL,
    id                BIGINT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    original_filename TEXT NOT NULL,
    file_size         BIGINT NOT NULL,
    mime_type         TEXT NOT NULL,
    owner_id          TEXT,
    status            TEXT NOT NULL,
    task_id           TEXT NOT NULL,
    PRIMARY KEY (id, user_id)
);

-- file_access_sync makes file_access hold (u, fid) exactly when u may see
-- file fid by the rule above.
CREATE OR REPLACE FUNCTION file_access_sync(fid BIGINT, u TEXT) RETURNS void AS $$
BEGIN
    IF u IS NULL THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM files WHERE id = fid AND owner_id = u)
       OR EXISTS (SELECT 1 FROM shares WHERE file_id = fid AND shared_with_user_id = u AND owner_id <> u) THEN
        INSERT INTO file_access (user_id, id, created_at, original_filename, file_size, mime_type, owner_id, status, task_id)
            SELECT u, f.id, f.created_at, f.original_filename, f.file_size, f.mime_type, f.owner_id, f.status, f.task_id
            FROM files f WHERE f.id = fid
            ON CONFLICT (id, user_id) DO NOTHING;
    ELSE
        DELETE FROM file_access WHERE id = fid AND user_id = u;
    END IF;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION files_file_access() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A new file has no shares yet: its owner's row alone.
        INSERT INTO file_access (user_id, id, created_at, original_filename, file_size, mime_type, owner_id, status, task_id)
            VALUES (NEW.owner_id, NEW.id, NEW.created_at, NEW.original_filename, NEW.file_size, NEW.mime_type, NEW.owner_id, NEW.status, NEW.task_id)
            ON CONFLICT (id, user_id) DO NOTHING;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM file_access WHERE id = OLD.id;
    ELSE
        UPDATE file_access SET created_at = NEW.created_at, original_filename = NEW.original_filename, file_size = NEW.file_size,
                mime_type = NEW.mime_type, owner_id = NEW.owner_id, status = NEW.status, task_id = NEW.task_id
            WHERE id = NEW.id;
        IF OLD.owner_id IS DISTINCT FROM NEW.owner_id THEN
            PERFORM file_access_sync(NEW.id, OLD.owner_id);
            PERFORM file_access_sync(NEW.id, NEW.owner_id);
        END IF;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

-- NOTE: files without an owner (single-user mode, unclaimed uploads)
-- have no rows here and their writes skip the function.
DROP TRIGGER IF EXISTS files_file_access_ins ON files;
CREATE TRIGGER files_file_access_ins AFTER INSERT ON files
    FOR EACH ROW WHEN (NEW.owner_id IS NOT NULL) EXECUTE FUNCTION files_file_access();
DROP TRIGGER IF EXISTS files_file_access_del ON files;
CREATE TRIGGER files_file_access_del AFTER DELETE ON files
    FOR EACH ROW WHEN (OLD.owner_id IS NOT NULL) EXECUTE FUNCTION files_file_access();
DROP TRIGGER IF EXISTS files_file_access_upd ON files;
CREATE TRIGGER files_file_access_upd
    AFTER UPDATE OF created_at, original_filename, file_size, mime_type, owner_id, status, task_id ON files
    FOR EACH ROW WHEN ((OLD.owner_id IS NOT NULL OR NEW.owner_id IS NOT NULL) AND (
        OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.original_filename IS DISTINCT FROM NEW.original_filename
        OR OLD.file_size IS DISTINCT FROM NEW.file_size OR OLD.mime_type IS DISTINCT FROM NEW.mime_type
        OR OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.task_id IS DISTINCT FROM NEW.task_id))
    EXECUTE FUNCTION files_file_access();

CREATE OR REPLACE FUNCTION shares_file_access() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM file_access_sync(OLD.file_id, OLD.shared_with_user_id);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM file_access_sync(NEW.file_id, NEW.shared_with_user_id);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS shares_file_access_ins ON shares;
CREATE TRIGGER shares_file_access_ins AFTER INSERT ON shares
    FOR EACH ROW EXECUTE FUNCTION shares_file_access();
DROP TRIGGER IF EXISTS shares_file_access_del ON shares;
CREATE TRIGGER shares_file_access_del AFTER DELETE ON shares
    FOR EACH ROW EXECUTE FUNCTION shares_file_access();
DROP TRIGGER IF EXISTS shares_file_access_upd ON shares;
CREATE TRIGGER shares_file_access_upd AFTER UPDATE OF file_id, owner_id, shared_with_user_id ON shares
    FOR EACH ROW WHEN (OLD.file_id IS DISTINCT FROM NEW.file_id OR OLD.owner_id IS DISTINCT FROM NEW.owner_id
        OR OLD.shared_with_user_id IS DISTINCT FROM NEW.shared_with_user_id)
    EXECUTE FUNCTION shares_file_access();

-- The rows start from what the tables hold; no write may slip between
-- the copy and the triggers (the lock lasts until the migration commits).
DELETE FROM file_access;
INSERT INTO file_access (user_id, id, created_at, original_filename, file_size, mime_type, owner_id, status, task_id)
    SELECT v.u, f.id, f.created_at, f.original_filename, f.file_size, f.mime_type, f.owner_id, f.status, f.task_id
    FROM (
        SELECT owner_id AS u, id AS fid FROM files WHERE owner_id IS NOT NULL
        UNION
        SELECT shared_with_user_id, file_id FROM shares WHERE owner_id <> shared_with_user_id
    ) v JOIN files f ON f.id = v.fid;

-- The listing's index: a user's page in order, every listed column in the
-- index (an index-only scan).
CREATE INDEX IF NOT EXISTS file_access_user ON file_access (user_id, created_at DESC, id DESC)
    INCLUDE (original_filename, file_size, mime_type, owner_id, status, task_id);

-- NOTE: the listing is a prepared statement with the user as its one
-- parameter. After five executions PostgreSQL compares the generic plan's
-- estimate with the custom plans' and keeps planning anew on every
-- execution when a user's own statistics (a most-common value of user_id,
-- here or in visible_file_counts) make custom plans look cheaper: in one
-- benchmark run of four the statement took 2,175 custom plans and one
-- generic, and cost PostgreSQL 3.5 times as much (0.24 against 0.07 ms a
-- request). Without statistics on the user column every user is estimated
-- alike, so the generic plan, the same plan without the planning, wins.
ALTER TABLE file_access ALTER COLUMN user_id SET STATISTICS 0;
ALTER TABLE visible_file_counts ALTER COLUMN user_id SET STATISTICS 0;
-- ANALYZE then skips the column but keeps what it collected before: drop
-- that where the migration may (a superuser's); elsewhere the statistics
-- of visible_file_counts stay until an administrator drops them.
DO $$
BEGIN
    DELETE FROM pg_statistic WHERE starelid = 'visible_file_counts'::regclass
        AND staattnum = (SELECT attnum FROM pg_attribute WHERE attrelid = 'visible_file_counts'::regclass AND attname = 'user_id');
EXCEPTION WHEN insufficient_privilege THEN
    NULL;
END
$$;
