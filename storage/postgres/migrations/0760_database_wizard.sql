-- The database wizard's migrations: a copy of docflow's database into
-- another PostgreSQL, or an import of the original service's database.
-- One row per job; its progress is what the API shows. A job runs in the
-- process that started it (lease_owner, heartbeat_at); one whose
-- heartbeat stopped is taken up again by the next request for the same
-- source and target (fingerprint: a hash of both URLs, passwords
-- included, which are never stored).
CREATE TABLE db_migration_jobs (
    id           BIGSERIAL PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('copy', 'import')),
    fingerprint  TEXT NOT NULL,
    source       TEXT NOT NULL,
    target       TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
    tables       JSONB NOT NULL DEFAULT '[]',
    errors       JSONB NOT NULL DEFAULT '[]',
    unmapped     JSONB NOT NULL DEFAULT '[]',
    lease_owner  TEXT NOT NULL DEFAULT '',
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at  TIMESTAMPTZ
);

CREATE INDEX db_migration_jobs_fingerprint ON db_migration_jobs (fingerprint, id DESC);

-- What an import took from the original service's database: each source
-- row once, with the id it got here (NULL when it was not carried over)
-- and why it was not, or what changed on the way (reason). Written in the
-- transaction of the rows themselves, so an interrupted import resumes
-- after the last batch it committed and imports nothing twice; keyed by
-- the source (a hash of its URL), so importing the same source again
-- brings only the rows added since.
CREATE TABLE legacy_import_rows (
    source_key   TEXT NOT NULL,
    source_table TEXT NOT NULL,
    source_id    BIGINT NOT NULL,
    target_id    BIGINT,
    reason       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (source_key, source_table, source_id)
);
