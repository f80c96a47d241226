-- The authentication mode the HTTP processes last started in (one row).
-- The first start with AUTH_ENABLED=true after a start without it (or the
-- first start of a version with this table) lists what was created while
-- anyone who reached the server acted as the administrator: tokens,
-- automation hooks, webhooks, local administrators.
CREATE TABLE auth_mode (
    id                BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    auth_enabled      BOOLEAN NOT NULL,
    -- When the last single-user period began (NULL: at the beginning).
    single_user_since TIMESTAMPTZ,
    -- When authentication was last turned on, and what was found then to
    -- review: HTTP processes that start soon after show it too.
    auth_enabled_at   TIMESTAMPTZ,
    review            TEXT NOT NULL DEFAULT ''
);
