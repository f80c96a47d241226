-- The SSO provider's picture of a user (the picture claim of its latest
-- sign-in, '' for none): the phone app's avatar (GET /api/mobile/whoami).
ALTER TABLE sso_users ADD COLUMN IF NOT EXISTS picture TEXT NOT NULL DEFAULT '';

-- QR login (qr_challenges, from the first schema): a signed-in web user's
-- challenge, shown as a QR code, that a phone claims once within five
-- minutes for an API token of the user's. Known by the SHA-256 of its
-- token only; in the database, so that any api process answers the page's
-- polling and the phone's claim. The claim records when, for which device
-- and which token it issued; status turns 'claimed' with it (expiry is
-- read from expires_at).
ALTER TABLE qr_challenges
    ADD COLUMN IF NOT EXISTS claimed_at  TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS device_name TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS token_id    BIGINT;
CREATE INDEX IF NOT EXISTS qr_challenges_expires ON qr_challenges (expires_at);
