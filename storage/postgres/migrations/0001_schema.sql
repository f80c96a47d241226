-- docflow schema: the whole domain of the interface spec.
-- Owner ids are strings (email, SSO subject or admin username); NULL = unclaimed / system.

CREATE TABLE settings (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,          -- plaintext, or base64(AES-GCM) when encrypted
    encrypted  BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE user_profiles (
    id                 BIGSERIAL PRIMARY KEY,
    user_id            TEXT NOT NULL UNIQUE,
    display_name       TEXT,
    daily_upload_limit INTEGER,
    notes              TEXT,
    is_blocked         BOOLEAN NOT NULL DEFAULT FALSE,
    subscription_tier  TEXT NOT NULL DEFAULT 'free',
    preferred_language TEXT,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE local_users (
    id            BIGSERIAL PRIMARY KEY,
    email         TEXT NOT NULL,
    username      TEXT NOT NULL,
    display_name  TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL,
    is_admin      BOOLEAN NOT NULL DEFAULT FALSE,
    is_active     BOOLEAN NOT NULL DEFAULT TRUE,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX local_users_email ON local_users (lower(email));
CREATE UNIQUE INDEX local_users_username ON local_users (lower(username));

CREATE TABLE password_resets (
    token_hash TEXT PRIMARY KEY,
    local_user_id BIGINT NOT NULL REFERENCES local_users(id) ON DELETE CASCADE,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    is_admin   BOOLEAN NOT NULL DEFAULT FALSE,
    data       JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE api_tokens (
    id           BIGSERIAL PRIMARY KEY,
    owner_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    token_prefix TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    is_active    BOOLEAN NOT NULL DEFAULT TRUE,
    last_used_at TIMESTAMPTZ,
    last_used_ip TEXT,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at   TIMESTAMPTZ,
    expires_at   TIMESTAMPTZ
);
CREATE INDEX api_tokens_owner ON api_tokens (owner_id, id);

CREATE TABLE qr_challenges (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'pending',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE mobile_devices (
    id          BIGSERIAL PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    push_token  TEXT NOT NULL,
    device_name TEXT NOT NULL DEFAULT '',
    platform    TEXT NOT NULL,
    is_active   BOOLEAN NOT NULL DEFAULT TRUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (owner_id, push_token)
);

-- Pipelines ----------------------------------------------------------------

CREATE TABLE pipelines (
    id          BIGSERIAL PRIMARY KEY,
    owner_id    TEXT,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    is_default  BOOLEAN NOT NULL DEFAULT FALSE,
    is_active   BOOLEAN NOT NULL DEFAULT TRUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX pipelines_name_per_owner ON pipelines (COALESCE(owner_id, ''), lower(name));
CREATE UNIQUE INDEX pipelines_one_default ON pipelines (COALESCE(owner_id, '')) WHERE is_default;

CREATE TABLE pipeline_steps (
    id          BIGSERIAL PRIMARY KEY,
    pipeline_id BIGINT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    step_type   TEXT NOT NULL,
    label       TEXT NOT NULL DEFAULT '',
    enabled     BOOLEAN NOT NULL DEFAULT TRUE,
    config      JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX pipeline_steps_pipeline ON pipeline_steps (pipeline_id, position);

CREATE TABLE routing_rules (
    id                 BIGSERIAL PRIMARY KEY,
    owner_id           TEXT,
    name               TEXT NOT NULL,
    position           INTEGER NOT NULL,
    field              TEXT NOT NULL,
    operator           TEXT NOT NULL,
    value              TEXT NOT NULL,
    target_pipeline_id BIGINT NOT NULL REFERENCES pipelines(id) ON DELETE CASCADE,
    is_active          BOOLEAN NOT NULL DEFAULT TRUE,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX routing_rules_owner ON routing_rules (owner_id, position);

CREATE TABLE classification_rules (
    id             BIGSERIAL PRIMARY KEY,
    owner_id       TEXT,
    name           TEXT NOT NULL,
    category       TEXT NOT NULL,
    rule_type      TEXT NOT NULL,
    pattern        TEXT NOT NULL,
    priority       INTEGER NOT NULL DEFAULT 0,
    case_sensitive BOOLEAN NOT NULL DEFAULT FALSE,
    enabled        BOOLEAN NOT NULL DEFAULT TRUE,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX classification_rules_name ON classification_rules (COALESCE(owner_id, ''), name);

-- Files --------------------------------------------------------------------

CREATE TABLE files (
    id                BIGSERIAL PRIMARY KEY,
    filehash          TEXT NOT NULL,
    original_filename TEXT NOT NULL,
    stored_filename   TEXT NOT NULL,
    file_size         BIGINT NOT NULL,
    mime_type         TEXT NOT NULL,
    owner_id          TEXT,
    pipeline_id       BIGINT REFERENCES pipelines(id) ON DELETE SET NULL,
    status            TEXT NOT NULL DEFAULT 'pending',
    source            TEXT NOT NULL DEFAULT 'upload',
    duplicate_of      BIGINT REFERENCES files(id) ON DELETE SET NULL,
    original_blob     TEXT NOT NULL DEFAULT '',
    processed_blob    TEXT NOT NULL DEFAULT '',
    document_title    TEXT,
    ocr_text          TEXT NOT NULL DEFAULT '',
    ocr_quality_score DOUBLE PRECISION,
    ai_metadata       JSONB NOT NULL DEFAULT '{}',
    tags              TEXT[] NOT NULL DEFAULT '{}',
    language          TEXT NOT NULL DEFAULT '',
    storage_provider  TEXT,
    task_id           TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- Keyset-friendly indexes for the default listing and its filters.
CREATE INDEX files_created ON files (created_at DESC, id DESC);
CREATE INDEX files_owner_created ON files (owner_id, created_at DESC, id DESC);
CREATE INDEX files_status_created ON files (status, created_at DESC, id DESC);
CREATE INDEX files_hash ON files (filehash);
CREATE INDEX files_tags ON files USING GIN (tags);
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX files_name_trgm ON files USING GIN (lower(original_filename) gin_trgm_ops);
-- At most one non-duplicate record per hash: concurrent identical uploads
-- race on this index, so exactly one becomes the original.
CREATE UNIQUE INDEX files_one_original ON files (filehash) WHERE status <> 'duplicate' AND duplicate_of IS NULL;

CREATE TABLE file_embeddings (
    file_id    BIGINT PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    dimensions INTEGER NOT NULL,
    model      TEXT NOT NULL,
    vector     REAL[] NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE similarity_pairs (
    file_a BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    file_b BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    score  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (file_a, file_b),
    CHECK (file_a < file_b)
);
CREATE INDEX similarity_pairs_score ON similarity_pairs (score DESC, file_a, file_b);

-- Runs and steps: one row per run, one per step of a run.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,        -- the task_id returned to clients
    file_id     BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    pipeline_id BIGINT REFERENCES pipelines(id) ON DELETE SET NULL,
    status      TEXT NOT NULL DEFAULT 'pending',
    options     JSONB NOT NULL DEFAULT '{}',   -- e.g. force_cloud_ocr
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX runs_file ON runs (file_id, created_at);
CREATE INDEX runs_unfinished ON runs (status) WHERE status IN ('pending', 'processing');

CREATE TABLE run_steps (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    step_type   TEXT NOT NULL,
    label       TEXT NOT NULL DEFAULT '',
    config      JSONB NOT NULL DEFAULT '{}',
    status      TEXT NOT NULL DEFAULT 'queued',
    attempts    INTEGER NOT NULL DEFAULT 0,
    message     TEXT NOT NULL DEFAULT '',
    started_at  TIMESTAMPTZ,
    finished_at TIMESTAMPTZ,
    PRIMARY KEY (run_id, position)
);

CREATE TABLE processing_logs (
    id        BIGSERIAL PRIMARY KEY,
    file_id   BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    task_id   TEXT NOT NULL,
    step_name TEXT NOT NULL,
    status    TEXT NOT NULL,
    message   TEXT NOT NULL DEFAULT '',
    timestamp TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX processing_logs_file ON processing_logs (file_id, id);

-- Daily/sliding upload accounting per user.
CREATE TABLE upload_counters (
    owner_id TEXT NOT NULL,
    day      DATE NOT NULL,
    count    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (owner_id, day)
);

-- Watch-folder intake memory, so a restart never ingests a file twice.
CREATE TABLE watch_folder_seen (
    folder     TEXT NOT NULL,
    name       TEXT NOT NULL,
    size       BIGINT NOT NULL,
    mtime      TIMESTAMPTZ NOT NULL,
    file_id    BIGINT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (folder, name, size, mtime)
);

-- Collaboration ------------------------------------------------------------

CREATE TABLE shares (
    id                  BIGSERIAL PRIMARY KEY,
    file_id             BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    owner_id            TEXT NOT NULL,
    shared_with_user_id TEXT NOT NULL,
    role                TEXT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (file_id, shared_with_user_id)
);
CREATE INDEX shares_user ON shares (shared_with_user_id, file_id);

CREATE TABLE comments (
    id          BIGSERIAL PRIMARY KEY,
    file_id     BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    user_id     TEXT NOT NULL,
    parent_id   BIGINT REFERENCES comments(id) ON DELETE CASCADE,
    body        TEXT NOT NULL,
    mentions    TEXT[] NOT NULL DEFAULT '{}',
    is_resolved BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX comments_file ON comments (file_id, created_at);

CREATE TABLE annotations (
    id              BIGSERIAL PRIMARY KEY,
    file_id         BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    page            INTEGER NOT NULL,
    x               DOUBLE PRECISION NOT NULL,
    y               DOUBLE PRECISION NOT NULL,
    width           DOUBLE PRECISION NOT NULL,
    height          DOUBLE PRECISION NOT NULL,
    content         TEXT NOT NULL DEFAULT '',
    annotation_type TEXT NOT NULL DEFAULT 'note',
    color           TEXT NOT NULL DEFAULT '#ffff00',
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX annotations_file ON annotations (file_id, page, created_at);

CREATE TABLE saved_searches (
    id         BIGSERIAL PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    name       TEXT NOT NULL,
    filters    JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (owner_id, name)
);

-- Integrations and events --------------------------------------------------

CREATE TABLE integrations (
    id               BIGSERIAL PRIMARY KEY,
    owner_id         TEXT NOT NULL,
    direction        TEXT NOT NULL,
    integration_type TEXT NOT NULL,
    name             TEXT NOT NULL,
    config           JSONB NOT NULL DEFAULT '{}',
    credentials      TEXT NOT NULL DEFAULT '',   -- encrypted JSON
    is_active        BOOLEAN NOT NULL DEFAULT TRUE,
    last_used_at     TIMESTAMPTZ,
    last_error       TEXT,
    state            JSONB NOT NULL DEFAULT '{}', -- poll cursors (IMAP UIDs…)
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX integrations_owner ON integrations (owner_id, direction);

CREATE TABLE deliveries (
    id             BIGSERIAL PRIMARY KEY,
    file_id        BIGINT NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    run_id         TEXT NOT NULL,
    destination    TEXT NOT NULL,       -- integration id or 'local'
    status         TEXT NOT NULL,
    remote_path    TEXT NOT NULL DEFAULT '',
    message        TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (run_id, destination)
);

CREATE TABLE webhooks (
    id          BIGSERIAL PRIMARY KEY,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL DEFAULT '',  -- encrypted
    events      TEXT[] NOT NULL DEFAULT '{}',
    is_active   BOOLEAN NOT NULL DEFAULT TRUE,
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE automation_hooks (
    id          BIGSERIAL PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    target_url  TEXT NOT NULL,
    events      TEXT[] NOT NULL DEFAULT '{}',
    hook_type   TEXT NOT NULL DEFAULT '',
    secret      TEXT NOT NULL DEFAULT '',  -- encrypted
    is_active   BOOLEAN NOT NULL DEFAULT TRUE,
    description TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per (event, subscriber) delivery, so a retry after a crash neither
-- loses nor duplicates beyond at-least-once.
CREATE TABLE event_deliveries (
    id            BIGSERIAL PRIMARY KEY,
    event_id      TEXT NOT NULL,
    subscriber    TEXT NOT NULL,           -- webhook:<id>, hook:<id>, device:<id>, admin
    status        TEXT NOT NULL DEFAULT 'pending',
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_attempt  TIMESTAMPTZ,
    last_error    TEXT,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (event_id, subscriber)
);

-- Transactional outbox: rows written in the same transaction as the change
-- they announce; the relay publishes them to Kafka and marks them sent.
CREATE TABLE outbox (
    id           BIGSERIAL PRIMARY KEY,
    topic        TEXT NOT NULL,
    key          TEXT NOT NULL DEFAULT '',
    payload      BYTEA NOT NULL,
    headers      JSONB NOT NULL DEFAULT '{}',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    available_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    sent_at      TIMESTAMPTZ
);
CREATE INDEX outbox_unsent ON outbox (available_at, id) WHERE sent_at IS NULL;

CREATE FUNCTION outbox_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('docflow_outbox', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- Analytics fallback (ClickHouse holds these rows in production).
CREATE TABLE metrics (
    kind        TEXT NOT NULL,
    ts          TIMESTAMPTZ NOT NULL,
    file_id     BIGINT NOT NULL DEFAULT 0,
    run_id      TEXT NOT NULL DEFAULT '',
    step_type   TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL DEFAULT 0,
    duration_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
    bytes       BIGINT NOT NULL DEFAULT 0,
    error_class TEXT NOT NULL DEFAULT '',
    channel     TEXT NOT NULL DEFAULT '',
    method      TEXT NOT NULL DEFAULT '',
    route       TEXT NOT NULL DEFAULT '',
    http_status INTEGER NOT NULL DEFAULT 0,
    owner_id    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX metrics_ts ON metrics (ts);
CREATE INDEX metrics_kind_ts ON metrics (kind, ts);

-- Seed: the system default pipeline.
INSERT INTO pipelines (owner_id, name, description, is_default, is_active)
VALUES (NULL, 'Standard Processing Pipeline',
        'Convert, deduplicate, OCR, extract metadata, classify, embed metadata, compute embedding, deliver.',
        TRUE, TRUE);
INSERT INTO pipeline_steps (pipeline_id, position, step_type, label, enabled, config)
SELECT p.id, s.pos - 1, s.step_type, s.label, TRUE, '{}'
FROM pipelines p,
     (VALUES (1, 'convert_to_pdf', 'Convert to PDF'),
             (2, 'check_duplicates', 'Check duplicates'),
             (3, 'ocr', 'OCR'),
             (4, 'extract_metadata', 'Extract metadata'),
             (5, 'classify', 'Classify'),
             (6, 'embed_metadata', 'Embed metadata'),
             (7, 'compute_embedding', 'Compute embedding'),
             (8, 'send_to_destinations', 'Send to destinations')) AS s(pos, step_type, label)
WHERE p.name = 'Standard Processing Pipeline' AND p.owner_id IS NULL;
