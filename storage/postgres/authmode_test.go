package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// The authentication mode across starts: the first start with it on lists
// what was made before (an upgraded instance: everything); starts soon
// after show the same list, later ones nothing; turning it off and on
// again lists only what the new single-user period made.
func TestAuthModeLeftovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "authmode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	s := postgres.NewAuthModeStore(db)
	tokens := postgres.NewTokenStore(db)
	token := func(name string) {
		t.Helper()
		if err := tokens.CreateToken(ctx, &docflow.APIToken{OwnerID: "admin", Name: name, TokenPrefix: "dfl_" + name, TokenHash: name}); err != nil {
			t.Fatal(err)
		}
	}
	token("old")
	now := time.Now().Add(time.Second)

	if l, err := s.RecordStart(ctx, false, now); err != nil || l != nil {
		t.Fatalf("single-user start: %v %v", l, err)
	}
	if l, err := s.RecordStart(ctx, true, now.Add(time.Minute)); err != nil || l == nil || l.Tokens.Count != 1 || l.Since != nil {
		t.Fatalf("first start with authentication: %+v %v", l, err)
	}
	if l, _ := s.RecordStart(ctx, true, now.Add(time.Hour)); l == nil || l.Tokens.Count != 1 {
		t.Errorf("a start an hour later: %+v", l)
	}
	if l, _ := s.RecordStart(ctx, true, now.Add(25*time.Hour)); l != nil {
		t.Errorf("a start a day later: %+v", l)
	}

	off := time.Now().Add(2 * time.Second)
	if l, _ := s.RecordStart(ctx, false, off); l != nil {
		t.Errorf("back to single-user: %+v", l)
	}
	// The new token is made once the database's clock is past the switch.
	testsupport.WaitFor(t, time.Minute, "the database clock past the switch", func() bool {
		var past bool
		if err := db.Pool.QueryRow(ctx, `SELECT now() > $1`, off).Scan(&past); err != nil {
			t.Fatal(err)
		}
		return past
	})
	token("new")
	l, err := s.RecordStart(ctx, true, time.Now().Add(time.Second))
	if err != nil || l == nil || l.Tokens.Count != 1 || len(l.Tokens.Examples) != 1 || l.Since == nil {
		t.Fatalf("second switch: %+v %v", l, err)
	}
	if ex := l.Tokens.Examples[0]; !strings.Contains(ex, `"new"`) {
		t.Errorf("second switch lists %q", ex)
	}

	// An instance upgraded while authentication is on lists once what
	// exists, as it cannot tell what single-user mode made.
	db2, cleanup2, err := postgres.OpenTestDB(ctx, "authmode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup2)
	if err := postgres.NewTokenStore(db2).CreateToken(ctx, &docflow.APIToken{OwnerID: "admin", Name: "x", TokenPrefix: "dfl_x", TokenHash: "x"}); err != nil {
		t.Fatal(err)
	}
	if l, err := postgres.NewAuthModeStore(db2).RecordStart(ctx, true, time.Now().Add(time.Second)); err != nil || l == nil || l.Tokens.Count != 1 {
		t.Errorf("upgraded with authentication on: %+v %v", l, err)
	}
}
