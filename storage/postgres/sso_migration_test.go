package postgres

import (
	"context"
	"testing"
)

// Migration 0570 on SSO users kept from before: an SSO identity that
// signed in as a local account loses the SSO admin status it gave the
// account, and the account's sessions end; sessions keep no SSO admin
// status; other SSO users keep theirs, to be bound at their next sign-in.
func TestSSOMigrationOfOldSignIns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	for _, q := range []string{
		`INSERT INTO local_users (email, username, password_hash, is_admin) VALUES ('Boss@Example.com', 'boss', 'x', TRUE)`,
		`INSERT INTO sso_users (user_id, issuer, subject, is_admin, first_sign_in_at, last_sign_in_at, verified_at)
			VALUES ('boss@example.com', 'https://idp/', 'mallory', TRUE, now(), now(), now()),
			       ('ann@example.com', 'https://idp/', 'u-ann', TRUE, now(), now(), now())`,
		`INSERT INTO sessions (id, user_id, is_admin, expires_at) VALUES
			('s-boss', 'Boss@Example.com', TRUE, now() + interval '1 day'),
			('s-ann', 'ann@example.com', TRUE, now() + interval '1 day'),
			('s-other', 'other@example.com', TRUE, now() + interval '1 day')`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	sql, err := migrationFS.ReadFile("migrations/0570_sso_identity.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, string(sql)); err != nil {
		t.Fatalf("migration 0570 again: %v", err)
	}
	var got string
	if err := db.Pool.QueryRow(ctx, `SELECT string_agg(user_id || ':' || is_admin::text || ':' || (bound_at IS NULL)::text, ',' ORDER BY user_id)
		FROM sso_users`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "ann@example.com:true:true,boss@example.com:false:true" {
		t.Fatalf("sso users: %s", got)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT string_agg(id || ':' || is_admin::text, ',' ORDER BY id) FROM sessions`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "s-ann:false,s-other:true" {
		t.Fatalf("sessions: %s", got)
	}
}
