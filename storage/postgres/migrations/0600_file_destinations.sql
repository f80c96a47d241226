-- Delivery to storage destinations: one row per (file, destination) with
-- the state of its latest request. A destination is an integration (its
-- id, as text, so that the row outlives a deleted integration) or 'local',
-- the system-wide folder. Each new request (a run's send_to_destinations,
-- a send-to) moves request; an attempt of an older request is stale.
CREATE TABLE file_destinations (
    id               BIGSERIAL PRIMARY KEY,
    file_id          BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    destination      TEXT NOT NULL,
    integration_id   BIGINT REFERENCES integrations(id) ON DELETE SET NULL,
    integration_type TEXT NOT NULL,
    name             TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    request          BIGINT NOT NULL DEFAULT 1,
    run_id           TEXT,
    attempts         INT NOT NULL DEFAULT 0,
    remote_path      TEXT NOT NULL DEFAULT '',
    error            TEXT,
    next_attempt_at  TIMESTAMPTZ,
    delivered_at     TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (file_id, destination)
);

CREATE INDEX file_destinations_pending ON file_destinations (destination)
    WHERE status IN ('queued', 'sending', 'retrying');

-- What the old per-run table recorded: the latest delivery of each file to
-- each destination.
INSERT INTO file_destinations (file_id, destination, integration_id, integration_type, name, status, run_id,
                               attempts, remote_path, error, delivered_at, created_at, updated_at)
SELECT DISTINCT ON (d.file_id, d.destination)
       d.file_id, d.destination, i.id, COALESCE(i.integration_type, upper(d.destination)),
       COALESCE(i.name, CASE WHEN d.destination = 'local' THEN 'LOCAL_DESTINATION_DIR' ELSE '' END),
       CASE WHEN d.status = 'delivered' THEN 'delivered' ELSE 'failed' END, d.run_id, 1, d.remote_path,
       NULLIF(d.message, ''), CASE WHEN d.status = 'delivered' THEN d.created_at END, d.created_at, d.created_at
FROM deliveries d LEFT JOIN integrations i ON i.id::text = d.destination
ORDER BY d.file_id, d.destination, d.created_at DESC, d.id DESC;

-- A destination integration changed (config, credentials, active flag:
-- its generation moved) or deleted tells the process that delivers to it,
-- in the transaction of the change: a message on the destinations topic
-- keyed by the integration, so it arrives in order with the integration's
-- tasks, at the actor that runs them. The payload is the one
-- actors/destinations decodes.
CREATE FUNCTION integrations_destination_changed() RETURNS trigger AS $$
DECLARE
    r integrations;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    IF r.direction <> 'DESTINATION' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.generation = OLD.generation THEN
        RETURN NULL;
    END IF;
    INSERT INTO outbox (topic, key, payload)
    VALUES ('docflow.destinations', r.id::text,
            convert_to(json_build_object('kind', 'changed', 'integration_id', r.id)::text, 'UTF8'));
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER integrations_destination_changed AFTER UPDATE OR DELETE ON integrations
    FOR EACH ROW EXECUTE FUNCTION integrations_destination_changed();
