package alerts_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/alerts"
	"docflow/actors/delivery"
	"docflow/storage/postgres"
)

type settings struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *settings) Get(k string) string { s.mu.Lock(); defer s.mu.Unlock(); return s.m[k] }
func (s *settings) set(k, v string)     { s.mu.Lock(); defer s.mu.Unlock(); s.m[k] = v }
func (s *settings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no")
}
func (s *settings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (s *settings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.EINVALID, "read only")
}
func (s *settings) Delete(context.Context, string) error { return nil }

// recording passes every claim to the real store and remembers it.
type recording struct {
	alerts.Store
	mu      sync.Mutex
	calls   int
	claimed []docflow.FailingIntegration
}

func (r *recording) ClaimFailingIntegrations(ctx context.Context, after time.Duration, limit int) ([]docflow.FailingIntegration, error) {
	got, err := r.Store.ClaimFailingIntegrations(ctx, after, limit)
	r.mu.Lock()
	r.calls++
	r.claimed = append(r.claimed, got...)
	r.mu.Unlock()
	return got, err
}

func (r *recording) seen() (int, []docflow.FailingIntegration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, append([]docflow.FailingIntegration(nil), r.claimed...)
}

// The actor claims nothing while no admin channel is configured, claims a
// failure once a channel is, never claims it again on later ticks, and
// stops ticking when poisoned.
func TestAlertsActorTicks(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	cipher, err := postgres.NewCipher(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	integrations := postgres.NewIntegrationStore(db, cipher)
	in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionDestination, IntegrationType: "LOCAL",
		Name: "archive", Config: map[string]any{"path": "out"}, IsActive: true}
	if err := integrations.CreateIntegration(ctx, in, true); err != nil {
		t.Fatal(err)
	}
	if err := integrations.SetIntegrationError(ctx, in.ID, "permission denied"); err != nil {
		t.Fatal(err)
	}

	st := &settings{m: map[string]string{"INTEGRATION_FAILING_NOTIFY_AFTER": "1ms"}}
	rec := &recording{Store: postgres.NewIntegrationAlertStore(db, delivery.AttemptMessage)}
	engine, err := actors.NewEngine(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pid, err := alerts.Spawn(engine, "test", alerts.Config{Store: rec, Settings: st, Tick: 20 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if calls, _ := rec.seen(); calls != 0 {
		t.Fatalf("%d claims without a channel", calls)
	}

	st.set("NOTIFICATION_URLS", "json://127.0.0.1:9/admin")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, got := rec.seen(); len(got) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failing integration was not claimed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	calls, got := rec.seen()
	if len(got) != 1 || got[0].ID != in.ID || got[0].LastError != "permission denied" || calls < 3 {
		t.Fatalf("after several ticks: %d claims, claimed %+v", calls, got)
	}

	<-engine.Poison(pid).Done()
	time.Sleep(50 * time.Millisecond)
	before, _ := rec.seen()
	time.Sleep(200 * time.Millisecond)
	if after, _ := rec.seen(); after != before {
		t.Errorf("still ticking after being stopped: %d claims, then %d", before, after)
	}
}
