-- An integration failing for a while notifies the admins once: since when
-- it has been failing (set when last_error goes from none to an error,
-- cleared with it) and when the admins were told (cleared when it
-- recovers, so the next failure notifies again).
--
-- A trigger keeps failing_since, so every writer of last_error (the
-- integrations' status reports, the IMAP sources' reports) maintains it
-- without knowing.

ALTER TABLE integrations
    ADD COLUMN failing_since       TIMESTAMPTZ,
    ADD COLUMN failure_notified_at TIMESTAMPTZ;

-- Integrations failing now: since now (when they started is unknown).
UPDATE integrations SET failing_since = now() WHERE last_error IS NOT NULL;

CREATE FUNCTION integrations_failing() RETURNS trigger AS $$
BEGIN
    IF NEW.last_error IS NULL THEN
        NEW.failing_since := NULL;
        NEW.failure_notified_at := NULL;
    ELSIF TG_OP = 'INSERT' OR OLD.last_error IS NULL THEN
        NEW.failing_since := now();
        NEW.failure_notified_at := NULL;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER integrations_failing BEFORE INSERT OR UPDATE OF last_error ON integrations
    FOR EACH ROW EXECUTE FUNCTION integrations_failing();

-- The alerts' scan: active integrations failing, not yet notified.
CREATE INDEX integrations_failing_unnotified ON integrations (failing_since)
    WHERE failing_since IS NOT NULL AND failure_notified_at IS NULL;
