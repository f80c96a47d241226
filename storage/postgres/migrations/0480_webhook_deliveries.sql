-- Webhook delivery: the event each delivery sends (so every attempt sends
-- the same body), the outcome of its latest attempt, every attempt in
-- event_delivery_attempts, and the failing flag of a webhook.

ALTER TABLE webhooks
    ADD COLUMN failing_since   TIMESTAMPTZ,  -- first failure since the last success
    ADD COLUMN last_success_at TIMESTAMPTZ;

ALTER TABLE event_deliveries
    ADD COLUMN event_name       TEXT NOT NULL DEFAULT '',
    ADD COLUMN event            JSONB NOT NULL DEFAULT '{}',
    ADD COLUMN last_status_code INTEGER,
    ADD COLUMN last_duration_ms BIGINT,
    ADD COLUMN delivered_at     TIMESTAMPTZ;

-- A subscriber's delivery log, newest first.
CREATE INDEX event_deliveries_subscriber ON event_deliveries (subscriber, id DESC);

CREATE TABLE event_delivery_attempts (
    id              BIGSERIAL PRIMARY KEY,
    delivery_id     BIGINT NOT NULL REFERENCES event_deliveries (id) ON DELETE CASCADE,
    attempt         INTEGER NOT NULL,
    status_code     INTEGER,
    duration_ms     BIGINT NOT NULL DEFAULT 0,
    error           TEXT,
    attempted_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    next_attempt_at TIMESTAMPTZ
);
CREATE INDEX event_delivery_attempts_delivery ON event_delivery_attempts (delivery_id, attempt);
