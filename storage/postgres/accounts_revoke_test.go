package postgres_test

import (
	"context"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// Each way an account's access ends takes its tokens, sessions and reset
// links with it in the store: set-password, reset and deactivation mark
// the tokens revoked, deletion deletes them; an e-mail change spends the
// reset links only.
func TestAccountChangesEndAccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db, _ := newAccounts(t)
	tokens, sessions := postgres.NewTokenStore(db), postgres.NewSessionStore(db)
	u, err := s.CreateLocalUser(ctx, docflow.LocalUserInput{Email: "kim@example.com", Username: "kim", Password: "kim-password"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	give := func() (tokenID int64, sessionID, link string) {
		t.Helper()
		n++
		tok := &docflow.APIToken{OwnerID: u.Email, Name: "t", TokenPrefix: "dfl_", TokenHash: string(rune('a'+n)) + "hash"}
		if err := tokens.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		sess := &docflow.Session{ID: string(rune('a'+n)) + "session", UserID: u.Email, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
		if err := sessions.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		link, _, err := s.CreateResetToken(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return tok.ID, sess.ID, link
	}
	ended := func(what string, tokenID int64, sessionID, link string) {
		t.Helper()
		if tok, err := tokens.FindToken(ctx, tokenID); err != nil || tok.IsActive || tok.RevokedAt == nil {
			t.Errorf("%s: token %+v %v, want revoked", what, tok, err)
		}
		if _, err := sessions.FindSession(ctx, sessionID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
			t.Errorf("%s: session still there (%v)", what, err)
		}
		if _, err := s.ResetPassword(ctx, link, "another-password"); docflow.ErrorCode(err) != docflow.EBADREQUEST {
			t.Errorf("%s: reset link still works (%v)", what, err)
		}
	}

	tok, sess, link := give()
	if err := s.SetLocalPassword(ctx, u.ID, "new-password-1"); err != nil {
		t.Fatal(err)
	}
	ended("set-password", tok, sess, link)

	tok, sess, link = give()
	_, _, other := give()
	if _, err := s.ResetPassword(ctx, link, "new-password-2"); err != nil {
		t.Fatal(err)
	}
	ended("reset", tok, sess, other)

	tok, sess, link = give()
	off := false
	if _, err := s.UpdateLocalUser(ctx, u.ID, docflow.LocalUserPatch{IsActive: &off}); err != nil {
		t.Fatal(err)
	}
	ended("deactivation", tok, sess, link)
	on := true
	if _, err := s.UpdateLocalUser(ctx, u.ID, docflow.LocalUserPatch{IsActive: &on}); err != nil {
		t.Fatal(err)
	}

	tok, _, link = give()
	email := "kim@new.example.com"
	if u, err = s.UpdateLocalUser(ctx, u.ID, docflow.LocalUserPatch{Email: &email}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResetPassword(ctx, link, "another-password"); docflow.ErrorCode(err) != docflow.EBADREQUEST {
		t.Errorf("e-mail change: reset link still works (%v)", err)
	}
	if got, err := tokens.FindToken(ctx, tok); err != nil || !got.IsActive || got.OwnerID != email {
		t.Errorf("e-mail change: token %+v %v, want active and moved", got, err)
	}

	if err := s.DeleteLocalUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if list, err := tokens.ListTokens(ctx, email); err != nil || len(list) != 0 {
		t.Errorf("deletion: tokens %v %v", list, err)
	}
}
