package app_test

import (
	"context"
	"testing"

	"docflow/internal/app/apptest"
)

// TestSSOUserState: the state of an SSO user as the sessions and tokens
// check reads it: unknown for a user without an SSO identity; the stored
// admin status while SSO_ADMIN_RECHECK has not passed; no admin status
// once it has and the provider cannot be asked (no refresh token); not
// active once the provider refused the user.
func TestSSOUserState(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true"}})
	ctx := context.Background()
	if _, err := a.DB.Pool.Exec(ctx, `INSERT INTO sso_users (user_id, issuer, subject, is_admin, bound_at, first_sign_in_at, last_sign_in_at, verified_at, disabled_at)
		VALUES ('fresh@example.com', 'https://idp/', 's1', TRUE, now(), now(), now(), now(), NULL),
		       ('stale@example.com', 'https://idp/', 's2', TRUE, now(), now(), now(), now() - interval '1 hour', NULL),
		       ('plain@example.com', 'https://idp/', 's3', FALSE, now(), now(), now(), now(), NULL),
		       ('gone@example.com', 'https://idp/', 's4', FALSE, now(), now(), now(), now(), now())`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user                 string
		known, active, admin bool
	}{
		{"nobody@example.com", false, false, false},
		{"fresh@example.com", true, true, true},
		{"stale@example.com", true, true, false},
		{"plain@example.com", true, true, false},
		{"gone@example.com", true, false, false},
	} {
		known, active, admin, err := a.SSOUserState(ctx, c.user)
		if err != nil || known != c.known || active != c.active || admin != c.admin {
			t.Errorf("%s: known %v active %v admin %v (%v), want %v %v %v", c.user, known, active, admin, err, c.known, c.active, c.admin)
		}
	}
}
