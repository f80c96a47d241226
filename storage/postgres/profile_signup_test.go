package postgres_test

import (
	"context"
	"testing"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

func TestEnsureProfileEmitsSignupOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "signup")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	p := postgres.NewProfileStore(db, streams.EncodeEvent)
	for i, want := range []bool{true, false} {
		created, err := p.EnsureProfile(ctx, "ann@example.com", "Ann", "sso")
		if err != nil || created != want {
			t.Fatalf("call %d: created %v err %v", i, created, err)
		}
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic=$1 AND key='user:ann@example.com'`, streams.TopicEvents).Scan(&n); err != nil || n != 1 {
		t.Fatalf("signup events: %d %v", n, err)
	}
	var payload []byte
	_ = db.Pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE topic=$1`, streams.TopicEvents).Scan(&payload)
	_, ev, err := streams.Decode[streams.Event](payload)
	if err != nil || ev.Name != docflow.EventUserSignup || ev.Data["user_id"] != "ann@example.com" || ev.Data["source"] != "sso" {
		t.Fatalf("event: %+v %v", ev, err)
	}
	if _, err := p.EnsureProfile(ctx, "", "", "sso"); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("empty id: %v", err)
	}
}
