-- IMAP sources: what each source took in, and which process runs it.

-- One row per mail attachment taken in (attachment >= 0, written in the
-- ingest's own transaction) and one per mail finished (attachment = -1:
-- every attachment taken in, skipped or refused). The primary key is what
-- makes a mail's attachment a document exactly once per integration.
CREATE TABLE integration_mail_seen (
    integration_id BIGINT NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
    message_key    TEXT NOT NULL,
    attachment     INT NOT NULL,
    file_id        BIGINT REFERENCES files(id) ON DELETE SET NULL,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (integration_id, message_key, attachment)
);

-- The lease: the worker process that runs the source, until lease_expires_at
-- unless it renews it.
ALTER TABLE integrations
    ADD COLUMN lease_owner      TEXT,
    ADD COLUMN lease_expires_at TIMESTAMPTZ;
