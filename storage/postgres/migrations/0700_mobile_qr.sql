-- The SSO provider's picture of a user (the picture claim of its latest
-- sign-in, '' for none): the phone app's avatar (GET /api/mobile/whoami).
ALTER TABLE sso_users ADD COLUMN IF NOT EXISTS picture TEXT NOT NULL DEFAULT '';

-- QR login: a signed-in web user's challenge, shown as a QR code, that a
-- phone claims once within five minutes for an API token of the user's.
-- Known by the SHA-256 of its token only; in the database, so that any
-- api process answers the page's polling and the phone's claim.
CREATE TABLE IF NOT EXISTS qr_challenges (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    claimed_at  TIMESTAMPTZ,
    device_name TEXT NOT NULL DEFAULT '',
    token_id    BIGINT
);
CREATE INDEX IF NOT EXISTS qr_challenges_expires ON qr_challenges (expires_at);
