-- How many files each user sees in multi-user mode: their own files plus
-- the files others shared with them (a share of one's own file counts
-- once, as its file). The files listing reads its total here instead of
-- counting 1,500 index entries per request; triggers keep it exact in the
-- transaction of every write, whichever process makes it.
--
-- A change appends a delta row (user, +1 or -1) rather than updating one
-- row per user, so that concurrent uploads and shares never wait on each
-- other's counter row. About one write in 32 folds the user's rows into
-- one (each row deleted by exactly one folder, so concurrent folds stay
-- exact); the total is the sum of a few rows.
LOCK TABLE files, shares IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE IF NOT EXISTS visible_file_counts (
    user_id TEXT NOT NULL,
    n BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS visible_file_counts_user ON visible_file_counts (user_id) INCLUDE (n);

CREATE OR REPLACE FUNCTION visible_count_add(u TEXT, d BIGINT) RETURNS void AS $$
BEGIN
    IF u IS NULL OR d = 0 THEN
        RETURN;
    END IF;
    INSERT INTO visible_file_counts (user_id, n) VALUES (u, d);
    IF random() < 1.0 / 32 THEN
        WITH gone AS (DELETE FROM visible_file_counts WHERE user_id = u RETURNING n)
        INSERT INTO visible_file_counts (user_id, n) SELECT u, sum(n) FROM gone HAVING count(*) > 0;
    END IF;
END
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION files_visible_count() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM visible_count_add(OLD.owner_id, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM visible_count_add(NEW.owner_id, 1);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

-- A file's shares follow its owner (files_to_shares, migration 0430) and
-- go with it (ON DELETE CASCADE): their own trigger counts them.
DROP TRIGGER IF EXISTS files_visible_count_ins ON files;
CREATE TRIGGER files_visible_count_ins AFTER INSERT ON files
    FOR EACH ROW WHEN (NEW.owner_id IS NOT NULL) EXECUTE FUNCTION files_visible_count();
DROP TRIGGER IF EXISTS files_visible_count_del ON files;
CREATE TRIGGER files_visible_count_del AFTER DELETE ON files
    FOR EACH ROW WHEN (OLD.owner_id IS NOT NULL) EXECUTE FUNCTION files_visible_count();
DROP TRIGGER IF EXISTS files_visible_count_upd ON files;
CREATE TRIGGER files_visible_count_upd AFTER UPDATE OF owner_id ON files
    FOR EACH ROW WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id) EXECUTE FUNCTION files_visible_count();

CREATE OR REPLACE FUNCTION shares_visible_count() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.owner_id <> OLD.shared_with_user_id THEN
        PERFORM visible_count_add(OLD.shared_with_user_id, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.owner_id <> NEW.shared_with_user_id THEN
        PERFORM visible_count_add(NEW.shared_with_user_id, 1);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS shares_visible_count_ins ON shares;
CREATE TRIGGER shares_visible_count_ins AFTER INSERT ON shares
    FOR EACH ROW EXECUTE FUNCTION shares_visible_count();
DROP TRIGGER IF EXISTS shares_visible_count_del ON shares;
CREATE TRIGGER shares_visible_count_del AFTER DELETE ON shares
    FOR EACH ROW EXECUTE FUNCTION shares_visible_count();
DROP TRIGGER IF EXISTS shares_visible_count_upd ON shares;
CREATE TRIGGER shares_visible_count_upd AFTER UPDATE OF owner_id, shared_with_user_id ON shares
    FOR EACH ROW WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.shared_with_user_id IS DISTINCT FROM NEW.shared_with_user_id)
    EXECUTE FUNCTION shares_visible_count();

-- The counts start from what the tables hold; no write may slip between
-- the count and the triggers (the lock lasts until the migration commits).
DELETE FROM visible_file_counts;
INSERT INTO visible_file_counts (user_id, n)
    SELECT u, sum(n) FROM (
        SELECT owner_id AS u, count(*) AS n FROM files WHERE owner_id IS NOT NULL GROUP BY owner_id
        UNION ALL
        SELECT shared_with_user_id, count(*) FROM shares WHERE owner_id <> shared_with_user_id GROUP BY shared_with_user_id
    ) c GROUP BY u;
