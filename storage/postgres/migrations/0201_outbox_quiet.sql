-- A transaction that publishes its own outbox rows right after commit (the
-- pipeline engine's write-through path) sets docflow.outbox_quiet = 'on' for
-- itself: its rows wake no relay. NOTIFY takes a cluster-wide lock at commit
-- that serialises every notifying transaction behind the WAL flush, which
-- caps step results at a few hundred per second.
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger AS $$
BEGIN
    IF current_setting('docflow.outbox_quiet', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify('docflow_outbox', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
