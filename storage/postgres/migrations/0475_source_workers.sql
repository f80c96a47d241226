-- The processes running IMAP sources, each stamped at every lease scan:
-- the live ones (stamped within a lease's lifetime) share the sources, each
-- taking at most its fair share.
CREATE TABLE source_workers (
    owner   TEXT PRIMARY KEY,
    seen_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
