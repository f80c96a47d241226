-- Automation hooks: whether a hook sees every user's events (its owner was
-- an administrator when it subscribed), and the fan-out's lookup by event.

ALTER TABLE automation_hooks
    ADD COLUMN sees_all BOOLEAN NOT NULL DEFAULT FALSE;

CREATE INDEX automation_hooks_owner ON automation_hooks (owner_id, id);
