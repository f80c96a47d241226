-- Idempotency keys of the upload and process-url routes: one row per user
-- and key for 24 hours. A row is 'running' while its first request is
-- served (until locked_until: a process that died mid-request frees the
-- key when its lease ends), then 'completed' with the answer a repeat
-- replays. request_hash is SHA-256 over method, path and the body's
-- content hash ('' while an upload runs: its content hash is known once
-- the body is read). Expired rows are swept.
CREATE TABLE idempotency_keys (
    user_id      TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL DEFAULT '',
    state        TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'completed')),
    status       INTEGER NOT NULL DEFAULT 0,
    content_type TEXT NOT NULL DEFAULT '',
    body         BYTEA,
    locked_until TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
