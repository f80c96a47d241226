package http

import (
	"context"
	"errors"
	nethttp "net/http"
	"strings"
	"testing"

	"docflow"
)

func sessionCookie(t *testing.T, resp *nethttp.Response) string {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no session cookie in %v", resp.Header)
	return ""
}

// TestPasswordChangeEndsSessions: a session lasts only as long as the
// password it signed in with, for the local admin (ADMIN_PASSWORD) and for
// local accounts.
func TestPasswordChangeEndsSessions(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "first password"}, func(e *testEnv) {
		local := func(ctx context.Context, username, password string) (*docflow.User, error) {
			var hash string
			err := e.DB.Pool.QueryRow(ctx, `SELECT password_hash FROM local_users WHERE username=$1`, username).Scan(&hash)
			if err != nil || hash != "hash of "+password {
				return nil, errors.New("bad password")
			}
			return &docflow.User{ID: username + "@example.test"}, nil
		}
		e.Server.cfg.LocalLogin = local
		e.Server.auth.cfg.LocalPasswordStamp = e.Sessions.LocalPasswordStamp
	})
	login := func(user, pw string) string {
		t.Helper()
		resp, body := e.do("POST", "/login", "", `{"username":"`+user+`","password":"`+pw+`"}`)
		e.expect(resp, body, 200)
		return sessionCookie(t, resp)
	}
	signedIn := func(cookie string, want bool) {
		t.Helper()
		resp, body := e.do("GET", "/api/api-tokens/", "", nil, "Cookie", cookie)
		if (resp.StatusCode == 200) != want {
			t.Fatalf("session %s: %d %s, want signed in %v", cookie[:20], resp.StatusCode, body, want)
		}
	}
	admin := login("admin", "first password")
	signedIn(admin, true)
	e.SetEnv("ADMIN_PASSWORD", "second password")
	signedIn(admin, false)
	if n := countRows(e, `SELECT count(*) FROM sessions`); n != 0 {
		t.Fatalf("%d sessions left after the password change", n)
	}
	signedIn(login("admin", "second password"), true)

	if _, err := e.DB.Pool.Exec(context.Background(), `INSERT INTO local_users (email, username, password_hash) VALUES ('alice@example.test', 'alice', 'hash of alice pw 1')`); err != nil {
		t.Fatal(err)
	}
	alice := login("alice", "alice pw 1")
	signedIn(alice, true)
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE local_users SET password_hash='hash of alice pw 2' WHERE username='alice'`); err != nil {
		t.Fatal(err)
	}
	signedIn(alice, false)
	alice = login("alice", "alice pw 2")
	signedIn(alice, true)
	// Deactivating the account ends its sessions as well.
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE local_users SET is_active=FALSE WHERE username='alice'`); err != nil {
		t.Fatal(err)
	}
	signedIn(alice, false)
	if !strings.HasPrefix(alice, "session=") {
		t.Fatal(alice)
	}
}
