-- Single sign-on with OpenID Connect. sso_attempts holds the sign-ins in
-- progress (state known by its hash, bound to a browser, taken once, ten
-- minutes at most); sso_users the latest SSO sign-in of each user, whose
-- is_admin (membership of ADMIN_GROUP_NAME) the user's API tokens inherit.
CREATE TABLE sso_attempts (
    state_hash   TEXT PRIMARY KEY,
    binding_hash TEXT NOT NULL,
    nonce        TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    issuer       TEXT NOT NULL,
    next         TEXT NOT NULL DEFAULT '/',
    redirect_uri TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX sso_attempts_expires ON sso_attempts (expires_at);

CREATE TABLE sso_users (
    user_id          TEXT PRIMARY KEY,
    issuer           TEXT NOT NULL,
    subject          TEXT NOT NULL,
    is_admin         BOOLEAN NOT NULL DEFAULT FALSE,
    first_sign_in_at TIMESTAMPTZ NOT NULL,
    last_sign_in_at  TIMESTAMPTZ NOT NULL
);
