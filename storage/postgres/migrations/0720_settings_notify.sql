-- Every process keeps the settings' database values in memory and learns
-- of a change from PostgreSQL itself: a change to the settings table,
-- whoever makes it (the settings API of any process, a migration, psql),
-- notifies docflow_settings with the key at its commit, and every process
-- listening reloads the values. A TRUNCATE (a system reset) notifies '*'.
-- A rolled-back change notifies nobody.

CREATE FUNCTION settings_notify() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('docflow_settings', '*');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('docflow_settings', OLD.key);
    ELSE
        PERFORM pg_notify('docflow_settings', NEW.key);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER settings_notify AFTER INSERT OR UPDATE OR DELETE ON settings
    FOR EACH ROW EXECUTE FUNCTION settings_notify();

CREATE TRIGGER settings_notify_truncate AFTER TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION settings_notify();
