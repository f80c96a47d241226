-- Settings take effect before the answer. Each integration carries the
-- generation of its settings, moved by a trigger whenever its config, its
-- credentials or its active flag change, in the transaction that changes
-- them. A source takes a mail in only under the generation it started
-- with: every integration_mail_seen row (an attachment taken in, with its
-- file, or a mail finished) names that generation, and a trigger refuses
-- the row, and with it the whole transaction, unless the integration is
-- still active with that generation. It reads the row FOR SHARE, so a
-- change waits for ingests already under way and any ingest after the
-- change's commit is refused: once the API has answered, a source started
-- before the change takes nothing in. The mail stays unseen on the server
-- for the source that runs under the new settings, if any.

ALTER TABLE integrations ADD COLUMN generation BIGINT NOT NULL DEFAULT 1;

-- Rows written before this migration have none.
ALTER TABLE integration_mail_seen ADD COLUMN generation BIGINT;

CREATE FUNCTION integrations_generation() RETURNS trigger AS $$
BEGIN
    IF NEW.config IS DISTINCT FROM OLD.config
       OR NEW.credentials IS DISTINCT FROM OLD.credentials
       OR NEW.is_active IS DISTINCT FROM OLD.is_active THEN
        NEW.generation := OLD.generation + 1;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER integrations_generation BEFORE UPDATE OF config, credentials, is_active ON integrations
    FOR EACH ROW EXECUTE FUNCTION integrations_generation();

-- SQLSTATE DF001: the source's settings are no longer the integration's
-- (storage maps it to "not found": the source stops).
CREATE FUNCTION integration_mail_seen_fence() RETURNS trigger AS $$
DECLARE
    current_generation BIGINT;
BEGIN
    SELECT generation INTO current_generation FROM integrations
        WHERE id = NEW.integration_id AND is_active
        FOR SHARE;
    IF current_generation IS NULL OR NEW.generation IS DISTINCT FROM current_generation THEN
        RAISE EXCEPTION 'integration % changed, stopped or deleted since its source started', NEW.integration_id
            USING ERRCODE = 'DF001';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER integration_mail_seen_fence BEFORE INSERT ON integration_mail_seen
    FOR EACH ROW EXECUTE FUNCTION integration_mail_seen_fence();
