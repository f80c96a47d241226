-- Pipeline engine: step leases, run progress, worker heartbeats.

-- A step being run is leased by one worker; the lease is renewed while the
-- step runs, so a redelivered task waits for a live holder instead of running
-- the step twice, and takes over once a dead holder's lease has expired.
ALTER TABLE run_steps ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE run_steps ADD COLUMN lease_until TIMESTAMPTZ;
CREATE INDEX run_steps_running ON run_steps (status) WHERE status IN ('running', 'retrying');

-- Why a run ended other than by completing (failure, stall, superseded).
ALTER TABLE runs ADD COLUMN message TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_unfinished_updated ON runs (updated_at) WHERE status IN ('pending', 'processing');

-- One row per running worker process, refreshed every few seconds.
CREATE TABLE workers (
    id          TEXT PRIMARY KEY,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    step_types  TEXT[] NOT NULL DEFAULT '{}',
    in_flight   INTEGER NOT NULL DEFAULT 0,
    started_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen   TIMESTAMPTZ NOT NULL DEFAULT now()
);
