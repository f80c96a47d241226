-- An SSO identity is the provider's (issuer, subject), not an address.
-- sso_users keeps one identity per user id: bound_at is set once the user
-- id belongs to (issuer, subject); rows from before have none and are
-- bound by the next sign-in with their verified address; linked when the
-- user id is a local account's, through sso_links. verified_at is when
-- the provider last vouched for the admin status (sign-in or check with
-- the refresh token, kept sealed); disabled_at when it refused the user.
-- (Written to be run again harmlessly: its test does.)
ALTER TABLE sso_users
    ADD COLUMN IF NOT EXISTS email           TEXT NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS bound_at        TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS linked          BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN IF NOT EXISTS verified_at     TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS refresh_token   TEXT,
    ADD COLUMN IF NOT EXISTS disabled_at     TIMESTAMPTZ,
    ADD COLUMN IF NOT EXISTS disabled_reason TEXT NOT NULL DEFAULT '';
UPDATE sso_users SET verified_at = last_sign_in_at WHERE verified_at IS NULL;
ALTER TABLE sso_users ALTER COLUMN verified_at SET NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS sso_users_identity ON sso_users (issuer, subject) WHERE bound_at IS NOT NULL;

-- An administrator's link of a local account to an SSO identity: without
-- one, an SSO sign-in never becomes a local account. subject is '' until
-- the first sign-in with the account's verified address binds it.
CREATE TABLE IF NOT EXISTS sso_links (
    local_user_id BIGINT PRIMARY KEY REFERENCES local_users(id) ON DELETE CASCADE,
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL DEFAULT '',
    linked_by     TEXT NOT NULL DEFAULT '',
    linked_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    bound_at      TIMESTAMPTZ
);
CREATE UNIQUE INDEX IF NOT EXISTS sso_links_identity ON sso_links (issuer, subject) WHERE subject <> '';

-- The mobile app's PKCE challenge travels with the sign-in attempt.
ALTER TABLE sso_attempts ADD COLUMN IF NOT EXISTS code_challenge TEXT NOT NULL DEFAULT '';

-- The one-time codes of the mobile hand-off with PKCE (a minute each).
CREATE TABLE IF NOT EXISTS mobile_codes (
    code_hash    TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    challenge    TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS mobile_codes_expires ON mobile_codes (expires_at);

-- An SSO sign-in used to become the local account with its address: until
-- an administrator links them, such an identity gives the account no SSO
-- admin status, and the sessions it may have opened end (the account's
-- own sessions too: a session does not say how it signed in).
UPDATE sso_users s SET is_admin = FALSE
    WHERE NOT s.linked AND EXISTS (SELECT 1 FROM local_users l WHERE lower(l.email) = lower(s.user_id));
DELETE FROM sessions WHERE lower(user_id) IN
    (SELECT lower(s.user_id) FROM sso_users s JOIN local_users l ON lower(l.email) = lower(s.user_id) WHERE NOT s.linked);

-- A session kept the SSO admin status it signed in with; it is read from
-- sso_users now.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'sessions' AND column_name = 'is_admin') THEN
        UPDATE sessions SET is_admin = FALSE WHERE user_id IN (SELECT user_id FROM sso_users);
    END IF;
END $$;
