-- An account's sessions are deleted by user id when it is deactivated,
-- deleted, or its password is reset or set by an administrator.
CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user_id);

-- Deactivating a local account now revokes its API tokens and spends its
-- reset links in the same transaction. Accounts deactivated before get the
-- same, so that reactivating one later does not bring its old tokens back.
UPDATE api_tokens t SET is_active = FALSE, revoked_at = now(), last_revoked_at = now()
FROM local_users u
WHERE t.owner_id = u.email AND NOT u.is_active AND t.is_active;

UPDATE password_resets r SET used_at = now()
FROM local_users u
WHERE r.local_user_id = u.id AND NOT u.is_active AND r.used_at IS NULL;
