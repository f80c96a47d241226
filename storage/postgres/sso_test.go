package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

func newSSOStore(t *testing.T, name string) (*postgres.SSOStore, *postgres.DB) {
	t.Helper()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	c, err := postgres.NewCipher(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	return postgres.NewSSOStore(db, c), db
}

// TestSSOStore: an attempt is taken once (also by two racing callbacks)
// and never once expired.
func TestSSOStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newSSOStore(t, "sso")
	now := time.Now()
	a := docflow.SSOAttempt{StateHash: "s1", BindingHash: "b1", Nonce: "n", Verifier: "v", Issuer: "https://idp/",
		Next: "/files", RedirectURI: "docflow://cb", CodeChallenge: "ch", ExpiresAt: now.Add(10 * time.Minute)}
	if err := s.SaveSSOAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.TakeSSOAttempt(ctx, "s1")
			if err == nil {
				if got.BindingHash != "b1" || got.Nonce != "n" || got.Verifier != "v" || got.Next != "/files" ||
					got.RedirectURI != "docflow://cb" || got.CodeChallenge != "ch" {
					t.Errorf("attempt %+v", got)
				}
				mu.Lock()
				taken++
				mu.Unlock()
			} else if docflow.ErrorCode(err) != docflow.ENOTFOUND {
				t.Errorf("take: %v", err)
			}
		}()
	}
	wg.Wait()
	if taken != 1 {
		t.Fatalf("taken %d times", taken)
	}
	a.StateHash, a.ExpiresAt = "s2", now.Add(-time.Second)
	if err := s.SaveSSOAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeSSOAttempt(ctx, "s2"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("expired attempt: %v", err)
	}
}

// TestSSOStoreIdentities: identities are bound to (issuer, subject); a
// sign-in stores the admin status and the refresh token (sealed at rest);
// a known address with another subject is refused; a row from before
// identities were bound is bound by the next verified sign-in; a local
// account's address signs in only through an administrator's link, never
// when deactivated; the checks with the provider apply only over the
// verification they started from.
func TestSSOStoreIdentities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newSSOStore(t, "sso_identities")
	const iss = "https://idp/"
	sign := func(sub, email string, admin bool, rt string) (*docflow.SSOResolution, error) {
		return s.SignInSSO(ctx, docflow.SSOSignIn{Issuer: iss, Subject: sub, Email: email, IsAdmin: admin, RefreshToken: rt}, "admin")
	}
	refused := func(err error, subjectChanged bool) {
		t.Helper()
		var r *docflow.SSORefusal
		if !errors.As(err, &r) || r.SubjectChanged != subjectChanged || docflow.ErrorCode(err) != docflow.EFORBIDDEN {
			t.Fatalf("want a refusal (subject changed %v), got %v", subjectChanged, err)
		}
	}
	res, err := sign("u1", "ann@example.com", true, "rt-1")
	if err != nil || res.UserID != "ann@example.com" {
		t.Fatalf("first sign-in: %+v %v", res, err)
	}
	u, err := s.FindSSOUser(ctx, "ann@example.com")
	if err != nil || !u.Bound || !u.IsAdmin || u.Subject != "u1" || u.RefreshToken != "rt-1" || u.DisabledAt != nil {
		t.Fatalf("stored: %+v %v", u, err)
	}
	var sealed string
	if err := db.Pool.QueryRow(ctx, `SELECT refresh_token FROM sso_users WHERE user_id='ann@example.com'`).Scan(&sealed); err != nil || strings.Contains(sealed, "rt-1") {
		t.Fatalf("refresh token at rest: %q %v", sealed, err)
	}
	// Another subject with the same address.
	_, err = sign("u2", "ann@example.com", true, "")
	refused(err, true)
	// The same subject with a new address stays the same user; a
	// sign-in without a refresh token keeps the stored one.
	if res, err := sign("u1", "ann.new@example.com", false, ""); err != nil || res.UserID != "ann@example.com" {
		t.Fatalf("changed address: %+v %v", res, err)
	}
	if u, _ := s.FindSSOUser(ctx, "ann@example.com"); u.IsAdmin || u.RefreshToken != "rt-1" || u.Email != "ann.new@example.com" {
		t.Fatalf("after the second sign-in: %+v", u)
	}
	// ADMIN_USERNAME.
	_, err = sign("u3", "admin", true, "")
	refused(err, false)

	// A row from before identities were bound.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sso_users (user_id, issuer, subject, is_admin, first_sign_in_at, last_sign_in_at, verified_at)
		VALUES ('old@example.com', $1, 'whatever', TRUE, now(), now(), now())`, iss); err != nil {
		t.Fatal(err)
	}
	if res, err := sign("u4", "old@example.com", false, ""); err != nil || res.UserID != "old@example.com" {
		t.Fatalf("legacy binding: %+v %v", res, err)
	}
	_, err = sign("u5", "old@example.com", false, "")
	refused(err, true)

	// Local accounts.
	var active, inactive int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO local_users (email, username, password_hash, is_admin) VALUES ('Boss@Example.com', 'boss', 'x', TRUE) RETURNING id`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `INSERT INTO local_users (email, username, password_hash, is_active) VALUES ('gone@example.com', 'gone', 'x', FALSE) RETURNING id`).Scan(&inactive); err != nil {
		t.Fatal(err)
	}
	_, err = sign("u6", "boss@example.com", false, "")
	refused(err, false)
	_, err = sign("boss@example.com", "", false, "") // a subject equal to the address
	refused(err, false)
	if _, err := s.LinkSSO(ctx, docflow.SSOLink{LocalUserID: active, Issuer: iss, LinkedBy: "admin"}); err != nil {
		t.Fatal(err)
	}
	// A pending link binds with the verified address only: without one,
	// the subject is a user of its own.
	if res, err := sign("u10", "", false, ""); err != nil || res.UserID != "u10" {
		t.Fatalf("unverified sign-in: %+v %v", res, err)
	}
	if res, err := sign("u6", "boss@example.com", false, ""); err != nil || res.UserID != "Boss@Example.com" || res.BindLink != active {
		t.Fatalf("linked sign-in: %+v %v", res, err)
	}
	if l, err := s.FindSSOLink(ctx, active); err != nil || l.Subject != "u6" || l.BoundAt == nil {
		t.Fatalf("bound link: %+v %v", l, err)
	}
	if u, err := s.FindSSOUser(ctx, "Boss@Example.com"); err != nil || !u.Linked {
		t.Fatalf("linked identity: %+v %v", u, err)
	}
	_, err = sign("u7", "boss@example.com", false, "")
	refused(err, true)
	// Bound by subject: any address.
	if res, err := sign("u6", "", false, ""); err != nil || res.UserID != "Boss@Example.com" {
		t.Fatalf("linked by subject: %+v %v", res, err)
	}
	if _, err := s.LinkSSO(ctx, docflow.SSOLink{LocalUserID: inactive, Issuer: iss, Subject: "u6"}); docflow.ErrorCode(err) != docflow.ECONFLICT {
		t.Fatalf("an identity linked twice: %v", err)
	}
	if _, err := s.LinkSSO(ctx, docflow.SSOLink{LocalUserID: 999999, Issuer: iss}); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("link to an unknown account: %v", err)
	}
	if _, err := s.LinkSSO(ctx, docflow.SSOLink{LocalUserID: inactive, Issuer: iss, Subject: "u8"}); err != nil {
		t.Fatal(err)
	}
	_, err = sign("u8", "gone@example.com", false, "")
	refused(err, false)
	_, err = sign("u9", "gone@example.com", false, "")
	refused(err, false)
	// Unlinking forgets the identity and ends the account's sessions.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (id, user_id, expires_at) VALUES ('s1', 'Boss@Example.com', now() + interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UnlinkSSO(ctx, active); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindSSOUser(ctx, "Boss@Example.com"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("identity after unlink: %v", err)
	}
	var n int
	if db.Pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE user_id='Boss@Example.com'`).Scan(&n); n != 0 {
		t.Fatalf("sessions after unlink: %d", n)
	}
	_, err = sign("u6", "boss@example.com", false, "")
	refused(err, false)

	// Checks with the provider.
	u, _ = s.FindSSOUser(ctx, "ann@example.com")
	later := u.VerifiedAt.Add(time.Hour)
	if ok, err := s.RecordSSOCheck(ctx, "ann@example.com", u.VerifiedAt, true, "rt-2", later); err != nil || !ok {
		t.Fatalf("check: %v %v", ok, err)
	}
	if ok, _ := s.DisableSSOUser(ctx, "ann@example.com", u.VerifiedAt, "late", later); ok {
		t.Fatal("a refusal over an older verification applied")
	}
	v, _ := s.FindSSOUser(ctx, "ann@example.com")
	if !v.IsAdmin || v.RefreshToken != "rt-2" || !v.VerifiedAt.Equal(later) || v.DisabledAt != nil {
		t.Fatalf("after the check: %+v", v)
	}
	if ok, err := s.DisableSSOUser(ctx, "ann@example.com", v.VerifiedAt, "refused", later); err != nil || !ok {
		t.Fatalf("disable: %v %v", ok, err)
	}
	if v, _ := s.FindSSOUser(ctx, "ann@example.com"); v.DisabledAt == nil || v.IsAdmin || v.RefreshToken != "" || v.DisabledReason != "refused" {
		t.Fatalf("disabled: %+v", v)
	}
	// The next sign-in enables it again.
	if _, err := sign("u1", "ann@example.com", false, ""); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.FindSSOUser(ctx, "ann@example.com"); v.DisabledAt != nil {
		t.Fatalf("still disabled after a sign-in: %+v", v)
	}
	// Forgetting releases the address for another subject.
	if _, err := s.ForgetSSOUser(ctx, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if res, err := sign("u2", "ann@example.com", false, ""); err != nil || res.UserID != "ann@example.com" {
		t.Fatalf("after forgetting: %+v %v", res, err)
	}
}

// TestMobileCodeStore: a code is taken once, even by racing exchanges.
func TestMobileCodeStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := newSSOStore(t, "mobile_codes")
	s := postgres.NewMobileCodeStore(db)
	now := time.Now()
	if err := s.SaveMobileCode(ctx, docflow.MobileCode{CodeHash: "h", UserID: "ann", Challenge: "c", RedirectURI: "docflow://cb",
		CreatedAt: now, ExpiresAt: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m, err := s.TakeMobileCode(ctx, "h"); err == nil {
				if m.UserID != "ann" || m.Challenge != "c" || m.RedirectURI != "docflow://cb" {
					t.Errorf("code %+v", m)
				}
				mu.Lock()
				taken++
				mu.Unlock()
			} else if docflow.ErrorCode(err) != docflow.ENOTFOUND {
				t.Errorf("take: %v", err)
			}
		}()
	}
	wg.Wait()
	if taken != 1 {
		t.Fatalf("taken %d times", taken)
	}
}
