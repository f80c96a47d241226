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
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// settings are fixed values, with how often each was asked for.
type settings struct {
	mu    sync.Mutex
	m     map[string]string
	asked map[string]int
}

func (s *settings) Get(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	s.asked[k]++
	return s.m[k]
}
func (s *settings) set(k, v string) { s.mu.Lock(); defer s.mu.Unlock(); s.m[k] = v }
func (s *settings) timesAsked(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[k]
}
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
	// Each tick asks for the channels first.
	testsupport.WaitFor(t, time.Minute, "five ticks", func() bool { return st.timesAsked("NOTIFICATION_URLS") >= 5 })
	if calls, _ := rec.seen(); calls != 0 {
		t.Fatalf("%d claims without a channel", calls)
	}

	st.set("NOTIFICATION_URLS", "json://127.0.0.1:9/admin")
	testsupport.WaitFor(t, time.Minute, "the failing integration claimed", func() bool {
		_, got := rec.seen()
		return len(got) > 0
	})
	testsupport.WaitFor(t, time.Minute, "three claims", func() bool {
		calls, _ := rec.seen()
		return calls >= 3
	})
	calls, got := rec.seen()
	if len(got) != 1 || got[0].ID != in.ID || got[0].LastError != "permission denied" || calls < 3 {
		t.Fatalf("after several ticks: %d claims, claimed %+v", calls, got)
	}

	<-engine.Poison(pid).Done()
	time.Sleep(50 * time.Millisecond) // a claim under way at the stop may end
	before, _ := rec.seen()
	time.Sleep(200 * time.Millisecond) // ten ticks' time: none may come
	if after, _ := rec.seen(); after != before {
		t.Errorf("still ticking after being stopped: %d claims, then %d", before, after)
	}
}
