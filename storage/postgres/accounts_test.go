package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/passwd"
	"docflow/storage/postgres"
	"docflow/streams"
)

func newAccounts(t *testing.T) (*postgres.AccountStore, *postgres.DB, *atomic.Int64) {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "accounts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	return postgres.NewAccountStore(db, streams.EncodeEvent, passwd.Hasher{}, now), db, &skew
}

func TestAccountCreateFindAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, _ := newAccounts(t)
	u, err := s.CreateLocalUser(ctx, docflow.LocalUserInput{Email: "Zoë@example.com", Username: "zoë", DisplayName: "Zoë Ünïcode", Password: "long enough", IsAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	if !u.IsActive || u.PasswordHash == "" || u.Email != "Zoë@example.com" {
		t.Fatalf("created %+v", u)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM user_profiles WHERE user_id='Zoë@example.com' AND display_name='Zoë Ünïcode'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("profile: %d %v", n, err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic=$1 AND key='user:Zoë@example.com'`, streams.TopicEvents).Scan(&n); err != nil || n != 1 {
		t.Fatalf("user.signup in the outbox: %d %v", n, err)
	}
	for _, in := range []docflow.LocalUserInput{
		{Email: "zoË@EXAMPLE.com", Username: "other", Password: "long enough"},
		{Email: "new@example.com", Username: "ZOË", Password: "long enough"},
	} {
		if _, err := s.CreateLocalUser(ctx, in); docflow.ErrorCode(err) != docflow.ECONFLICT {
			t.Fatalf("%+v: %v, want a conflict", in, err)
		}
	}
	for _, login := range []string{"zoë", "ZOË@example.com", " Zoë "} {
		got, err := s.Authenticate(ctx, login, "long enough")
		if err != nil || got.ID != u.ID {
			t.Fatalf("sign in as %q: %v", login, err)
		}
	}
	for _, c := range [][2]string{{"zoë", "wrong password"}, {"nobody", "long enough"}, {"", "long enough"}} {
		if _, err := s.Authenticate(ctx, c[0], c[1]); docflow.ErrorCode(err) != docflow.EUNAUTHORIZED {
			t.Fatalf("%q/%q: %v", c[0], c[1], err)
		}
	}
	if ok, _ := s.IsLocalAdmin(ctx, "zoë@example.com"); !ok {
		t.Fatal("an active admin account is an admin")
	}
	off := false
	if _, err := s.UpdateLocalUser(ctx, u.ID, docflow.LocalUserPatch{IsActive: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, "zoë", "long enough"); docflow.ErrorCode(err) != docflow.EUNAUTHORIZED {
		t.Fatalf("an inactive account signed in: %v", err)
	}
	if ok, _ := s.IsLocalAdmin(ctx, "Zoë@example.com"); ok {
		t.Fatal("an inactive admin is no admin")
	}
	if _, err := s.FindLocalUser(ctx, 999); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := s.UpdateLocalUser(ctx, 999, docflow.LocalUserPatch{IsActive: &off}); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("patch unknown id: %v", err)
	}
	if err := s.SetLocalPassword(ctx, 999, "long enough"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("set password of unknown id: %v", err)
	}
	if err := s.DeleteLocalUser(ctx, 999); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("delete unknown id: %v", err)
	}
}

func TestAccountOldHashUpgradedOnSignIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, _ := newAccounts(t)
	u, err := s.CreateLocalUser(ctx, docflow.LocalUserInput{Email: "old@example.com", Username: "old", Password: "old-params"})
	if err != nil {
		t.Fatal(err)
	}
	weak, _ := passwd.HashWith("old-params", passwd.Params{Memory: 8 * 1024, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	if _, err := db.Pool.Exec(ctx, `UPDATE local_users SET password_hash=$2 WHERE id=$1`, u.ID, weak); err != nil {
		t.Fatal(err)
	}
	got, err := s.Authenticate(ctx, "old", "old-params")
	if err != nil {
		t.Fatalf("a hash with old parameters does not verify: %v", err)
	}
	if passwd.NeedsRehash(got.PasswordHash) {
		t.Fatal("the hash was not upgraded")
	}
	if _, err := s.Authenticate(ctx, "old", "old-params"); err != nil {
		t.Fatalf("after the upgrade: %v", err)
	}
}

func TestAccountEmailChangeMovesOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, _ := newAccounts(t)
	a, _ := s.CreateLocalUser(ctx, docflow.LocalUserInput{Email: "a@example.com", Username: "a", Password: "password-a"})
	b, _ := s.CreateLocalUser(ctx, docflow.LocalUserInput{Email: "b@example.com", Username: "b", Password: "password-b"})
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var fa, fb int64
	db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, owner_id)
		VALUES ('h1', 'a.pdf', 'a.pdf', 1, 'application/pdf', 'a@example.com') RETURNING id`).Scan(&fa) //nolint:errcheck
	db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, owner_id)
		VALUES ('h2', 'b.pdf', 'b.pdf', 1, 'application/pdf', 'b@example.com') RETURNING id`).Scan(&fb) //nolint:errcheck
	exec(`INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'a@example.com', 'b@example.com', 'viewer')`, fa)
	exec(`INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'b@example.com', 'a@example.com', 'editor')`, fb)
	exec(`INSERT INTO comments (file_id, user_id, body, mentions) VALUES ($1, 'a@example.com', 'hi', '{a@example.com}')`, fb)
	exec(`INSERT INTO annotations (file_id, user_id, page, x, y, width, height) VALUES ($1, 'a@example.com', 1, 0, 0, 0.1, 0.1)`, fb)
	exec(`INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash) VALUES ('a@example.com', 't', 'dfl_', 'x')`)
	exec(`INSERT INTO saved_searches (owner_id, name) VALUES ('a@example.com', 's')`)
	exec(`INSERT INTO pipelines (owner_id, name) VALUES ('a@example.com', 'mine')`)
	exec(`INSERT INTO integrations (owner_id, direction, integration_type, name) VALUES ('a@example.com', 'DESTINATION', 'LOCAL', 'x')`)
	exec(`INSERT INTO sessions (id, user_id, expires_at) VALUES ('s1', 'a@example.com', now() + interval '1 day')`)

	taken := "B@example.com"
	if _, err := s.UpdateLocalUser(ctx, a.ID, docflow.LocalUserPatch{Email: &taken}); docflow.ErrorCode(err) != docflow.ECONFLICT {
		t.Fatalf("taken e-mail: %v", err)
	}
	if _, err := postgres.NewProfileStore(db, streams.EncodeEvent).EnsureProfile(ctx, "sso@example.com", "", "sso"); err != nil {
		t.Fatal(err)
	}
	sso := "sso@example.com"
	if _, err := s.UpdateLocalUser(ctx, a.ID, docflow.LocalUserPatch{Email: &sso}); docflow.ErrorCode(err) != docflow.ECONFLICT {
		t.Fatalf("an SSO user's id: %v", err)
	}
	to, name := "a2@example.com", "A Two"
	u, err := s.UpdateLocalUser(ctx, a.ID, docflow.LocalUserPatch{Email: &to, DisplayName: &name})
	if err != nil || u.Email != to || u.DisplayName != name || u.Username != "a" {
		t.Fatalf("patched %+v %v", u, err)
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	checks := map[string]int{
		`SELECT count(*) FROM user_profiles WHERE user_id='a2@example.com' AND display_name='A Two'`:          1,
		`SELECT count(*) FROM user_profiles WHERE user_id='a@example.com'`:                                    0,
		`SELECT count(*) FROM files WHERE owner_id='a2@example.com'`:                                          1,
		`SELECT count(*) FROM shares WHERE owner_id='a2@example.com' AND shared_with_user_id='b@example.com'`: 1,
		`SELECT count(*) FROM shares WHERE owner_id='b@example.com' AND shared_with_user_id='a2@example.com'`: 1,
		`SELECT count(*) FROM comments WHERE user_id='a2@example.com' AND mentions='{a2@example.com}'`:        1,
		`SELECT count(*) FROM annotations WHERE user_id='a2@example.com'`:                                     1,
		`SELECT count(*) FROM api_tokens WHERE owner_id='a2@example.com'`:                                     1,
		`SELECT count(*) FROM saved_searches WHERE owner_id='a2@example.com'`:                                 1,
		`SELECT count(*) FROM pipelines WHERE owner_id='a2@example.com'`:                                      1,
		`SELECT count(*) FROM integrations WHERE owner_id='a2@example.com'`:                                   1,
		`SELECT count(*) FROM sessions WHERE user_id='a@example.com'`:                                         0,
		// What the listing reads: the moved user sees their file and the
		// one shared with them; the old id sees nothing.
		`SELECT count(*) FROM file_access WHERE user_id='a2@example.com'`: 2,
		`SELECT count(*) FROM file_access WHERE user_id='a@example.com'`:  0,
		`SELECT count(*) FROM file_access WHERE user_id='b@example.com'`:  2,
	}
	for q, want := range checks {
		if got := count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	if _, err := s.Authenticate(ctx, "a2@example.com", "password-a"); err != nil {
		t.Fatalf("sign in with the new e-mail: %v", err)
	}

	// Delete: the account and its profile go, its documents stay.
	if err := s.DeleteLocalUser(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if count(`SELECT count(*) FROM user_profiles WHERE user_id='b@example.com'`) != 0 || count(`SELECT count(*) FROM files WHERE owner_id='b@example.com'`) != 1 {
		t.Fatal("delete: profile kept or documents removed")
	}
	if _, err := s.FindLocalUser(ctx, b.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("deleted account found: %v", err)
	}
}

func TestAccountResetTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, skew := newAccounts(t)
	u, _ := s.CreateLocalUser(ctx, docflow.LocalUserInput{Email: "r@example.com", Username: "r", Password: "first-password"})
	tok, exp, err := s.CreateResetToken(ctx, u.ID)
	if err != nil || len(tok) < 40 || time.Until(exp) < 59*time.Minute {
		t.Fatalf("token %q expires %v: %v", tok, exp, err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM password_resets WHERE token_hash=$1`, tok).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the token is stored in the clear: %d %v", n, err)
	}
	if _, err := s.ResetPassword(ctx, tok, "second-password"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, "r", "second-password"); err != nil {
		t.Fatalf("new password: %v", err)
	}
	if _, err := s.ResetPassword(ctx, tok, "third-password"); docflow.ErrorCode(err) != docflow.EBADREQUEST {
		t.Fatalf("a used token: %v", err)
	}
	for _, bad := range []string{"", "nonsense", string(make([]byte, 300))} {
		if _, err := s.ResetPassword(ctx, bad, "third-password"); docflow.ErrorCode(err) != docflow.EBADREQUEST {
			t.Fatalf("token %q: %v", bad, err)
		}
	}
	tok2, _, _ := s.CreateResetToken(ctx, u.ID)
	skew.Store(int64(61 * time.Minute))
	if _, err := s.ResetPassword(ctx, tok2, "third-password"); docflow.ErrorCode(err) != docflow.EBADREQUEST {
		t.Fatalf("an expired token: %v", err)
	}
	if _, _, err := s.CreateResetToken(ctx, 999); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("token for an unknown account: %v", err)
	}
}
