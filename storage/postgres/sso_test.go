package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// TestSSOStore: an attempt is taken once (also by two racing callbacks)
// and never once expired; a user's SSO admin status is the one of the
// latest sign-in.
func TestSSOStore(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "sso")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	s := postgres.NewSSOStore(db)
	now := time.Now()
	a := docflow.SSOAttempt{StateHash: "s1", BindingHash: "b1", Nonce: "n", Verifier: "v", Issuer: "https://idp/",
		Next: "/files", RedirectURI: "docflow://cb", ExpiresAt: now.Add(10 * time.Minute)}
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
				if got.BindingHash != "b1" || got.Nonce != "n" || got.Verifier != "v" || got.Next != "/files" || got.RedirectURI != "docflow://cb" {
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

	for _, c := range []struct{ admin bool }{{true}, {false}, {true}} {
		if err := s.RecordSSOSignIn(ctx, docflow.SSOSignIn{UserID: "ann@example.com", Issuer: "https://idp/", Subject: "u1", IsAdmin: c.admin}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.IsSSOAdmin(ctx, "ann@example.com"); err != nil || got != c.admin {
			t.Fatalf("admin %v, want %v (%v)", got, c.admin, err)
		}
	}
	if got, err := s.IsSSOAdmin(ctx, "nobody"); err != nil || got {
		t.Fatalf("unknown user admin %v %v", got, err)
	}
}
