-- When a token was last revoked, kept when it is reactivated: a token
-- revoked later than another may not bring that other back.
ALTER TABLE api_tokens ADD COLUMN last_revoked_at TIMESTAMPTZ;
UPDATE api_tokens SET last_revoked_at = revoked_at WHERE revoked_at IS NOT NULL;

-- The fingerprint of the password a session was signed in with: a session
-- whose fingerprint no longer matches the account's (ADMIN_PASSWORD or the
-- local password changed) is over. Sessions from before this column are
-- signed in again.
ALTER TABLE sessions ADD COLUMN password_stamp TEXT NOT NULL DEFAULT '';
