package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// testAttempt stands in for the delivery core's attempt message: a topic
// of its own, the delivery id as key.
func testAttempt(id int64, attempt int) (docflow.OutboxMessage, error) {
	return docflow.OutboxMessage{Topic: "test.attempts", Key: strconv.FormatInt(id, 10),
		Payload: []byte(`{"attempt":` + strconv.Itoa(attempt) + `}`)}, nil
}

// An integration failing for longer than the threshold is claimed once,
// with its admin delivery and first attempt in the same transaction;
// younger failures, inactive and healthy integrations are not; a change
// of error keeps the claim; recovering and failing anew makes it
// claimable again; two processes claiming at once never claim one
// integration twice.
func TestClaimFailingIntegrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newIntegrationStore(t)
	alerts := postgres.NewIntegrationAlertStore(db, testAttempt)
	mk := func(name string, active bool, failingFor time.Duration) int64 {
		t.Helper()
		in := localRecord("ann", active)
		in.Name = name
		if err := s.CreateIntegration(ctx, in, true); err != nil {
			t.Fatal(err)
		}
		if failingFor > 0 {
			if err := s.SetIntegrationError(ctx, in.ID, "disk full"); err != nil {
				t.Fatal(err)
			}
			backdate(t, db, in.ID, failingFor)
		}
		return in.ID
	}
	old := mk("old", true, 2*time.Hour)
	mk("young", true, 10*time.Minute)
	mk("inactive", false, 2*time.Hour)
	mk("healthy", true, 0)

	got, err := alerts.ClaimFailingIntegrations(ctx, time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != old || got[0].Name != "old" || got[0].LastError != "disk full" ||
		got[0].IntegrationType != "LOCAL" || got[0].Direction != docflow.DirectionDestination || time.Since(got[0].FailingSince) < 2*time.Hour {
		t.Fatalf("claimed %+v", got)
	}
	var delivery int64
	var sub, name string
	var body []byte
	if err := db.Pool.QueryRow(ctx, `SELECT id, subscriber, event_name, event FROM event_deliveries`).Scan(&delivery, &sub, &name, &body); err != nil {
		t.Fatal(err)
	}
	var ev docflow.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	if sub != docflow.SubscriberAdmin || name != docflow.EventIntegrationFailing || ev.Name != name || len(ev.ID) != 28 ||
		ev.Data["integration_id"] != float64(old) || ev.Data["name"] != "old" || ev.Data["error"] != "disk full" {
		t.Fatalf("delivery %s %s %s", sub, name, body)
	}
	var key string
	if err := db.Pool.QueryRow(ctx, `SELECT key FROM outbox WHERE topic = 'test.attempts'`).Scan(&key); err != nil || key != strconv.FormatInt(delivery, 10) {
		t.Fatalf("attempt message: %q %v", key, err)
	}

	if got, err := alerts.ClaimFailingIntegrations(ctx, time.Hour, 10); err != nil || len(got) != 0 {
		t.Fatalf("claimed again: %+v %v", got, err)
	}
	// Another error while still failing: the same failure.
	if err := s.SetIntegrationError(ctx, old, "disk still full"); err != nil {
		t.Fatal(err)
	}
	if got, err := alerts.ClaimFailingIntegrations(ctx, time.Hour, 10); err != nil || len(got) != 0 {
		t.Fatalf("claimed after another error: %+v %v", got, err)
	}
	// Recovered, then failing anew: a new failure, notified in its turn.
	if err := s.SetIntegrationError(ctx, old, ""); err != nil {
		t.Fatal(err)
	}
	var since, notified *time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT failing_since, failure_notified_at FROM integrations WHERE id = $1`, old).Scan(&since, &notified); err != nil || since != nil || notified != nil {
		t.Fatalf("after recovery: %v %v %v", since, notified, err)
	}
	if err := s.SetIntegrationError(ctx, old, "disk full again"); err != nil {
		t.Fatal(err)
	}
	if got, err := alerts.ClaimFailingIntegrations(ctx, time.Hour, 10); err != nil || len(got) != 0 {
		t.Fatalf("a fresh failure claimed: %+v %v", got, err)
	}
	backdate(t, db, old, 90*time.Minute)
	if got, err := alerts.ClaimFailingIntegrations(ctx, time.Hour, 10); err != nil || len(got) != 1 || got[0].LastError != "disk full again" {
		t.Fatalf("the new failure: %+v %v", got, err)
	}

	// Two processes at once over 20 due integrations, 3 at a time.
	want := map[int64]bool{}
	for i := range 20 {
		want[mk("many"+strconv.Itoa(i), true, 3*time.Hour)] = true
	}
	var mu sync.Mutex
	claimed := map[int64]int{}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				got, err := alerts.ClaimFailingIntegrations(ctx, time.Hour, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, f := range got {
					claimed[f.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != len(want) {
		t.Fatalf("claimed %d of %d", len(claimed), len(want))
	}
	for id, n := range claimed {
		if n != 1 || !want[id] {
			t.Errorf("integration %d claimed %d times (wanted: %v)", id, n, want[id])
		}
	}
	var deliveries int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM event_deliveries WHERE subscriber = 'admin'`).Scan(&deliveries); err != nil || deliveries != 22 {
		t.Fatalf("%d admin deliveries (%v), want 22", deliveries, err)
	}
}

// backdate makes integration id's current failure d old.
func backdate(t *testing.T, db *postgres.DB, id int64, d time.Duration) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `UPDATE integrations SET failing_since = now() - $2::interval WHERE id = $1`, id, d); err != nil {
		t.Fatal(err)
	}
}
