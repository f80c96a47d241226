-- An SSO identity is the provider's (issuer, subject), not an address.
-- sso_users keeps one identity per user id: bound_at is set once the user
-- id belongs to (issuer, subject); rows from before have none and are
-- bound by the next sign-in with their verified address; linked when the
-- user id is a local account's, through sso_links. verified_at is
-- when the provider last vouched for the admin status (sign-in or check
-- with the refresh token, kept sealed); disabled_at when it refused the
-- user.
ALTER TABLE sso_users
    ADD COLUMN email           TEXT NOT NULL DEFAULT '',
    ADD COLUMN bound_at        TIMESTAMPTZ,
    ADD COLUMN linked          BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN verified_at     TIMESTAMPTZ,
    ADD COLUMN refresh_token   TEXT,
    ADD COLUMN disabled_at     TIMESTAMPTZ,
    ADD COLUMN disabled_reason TEXT NOT NULL DEFAULT '';
UPDATE sso_users SET verified_at = last_sign_in_at;
ALTER TABLE sso_users ALTER COLUMN verified_at SET NOT NULL;
CREATE UNIQUE INDEX sso_users_identity ON sso_users (issuer, subject) WHERE bound_at IS NOT NULL;

-- An administrator's link of a local account to an SSO identity: without
-- one, an SSO sign-in never becomes a local account. subject is '' until
-- the first sign-in with the account's verified address binds it.
CREATE TABLE sso_links (
    local_user_id BIGINT PRIMARY KEY REFERENCES local_users(id) ON DELETE CASCADE,
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL DEFAULT '',
    linked_by     TEXT NOT NULL DEFAULT '',
    linked_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    bound_at      TIMESTAMPTZ
);
CREATE UNIQUE INDEX sso_links_identity ON sso_links (issuer, subject) WHERE subject <> '';

-- The mobile app's PKCE challenge travels with the sign-in attempt.
ALTER TABLE sso_attempts ADD COLUMN code_challenge TEXT NOT NULL DEFAULT '';

-- The one-time codes of the mobile hand-off with PKCE (a minute each).
CREATE TABLE mobile_codes (
    code_hash    TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    challenge    TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX mobile_codes_expires ON mobile_codes (expires_at);

-- A session kept the SSO admin status it signed in with; it is read from
-- sso_users now.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'sessions' AND column_name = 'is_admin') THEN
        UPDATE sessions SET is_admin = FALSE WHERE user_id IN (SELECT user_id FROM sso_users);
    END IF;
END $$;
