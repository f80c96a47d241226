package sources_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/sources"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/netguard"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// dyingStore is a worker's view of the store that can die: once dead, the
// worker's scans fail and it releases nothing, as a killed process would.
type dyingStore struct {
	*postgres.SourceStore
	dead atomic.Bool
}

func (d *dyingStore) ClaimSources(ctx context.Context, owner string, ttl time.Duration) ([]docflow.SourceClaim, error) {
	if d.dead.Load() {
		return nil, errors.New("process gone")
	}
	return d.SourceStore.ClaimSources(ctx, owner, ttl)
}

func (d *dyingStore) ReleaseSources(ctx context.Context, owner string) error {
	if d.dead.Load() {
		return nil
	}
	return d.SourceStore.ReleaseSources(ctx, owner)
}

type noIntake struct{}

func (noIntake) IngestMail(context.Context, docflow.Upload, docflow.MailSeen) (*docflow.IntakeResult, error) {
	return nil, errors.New("no mail expected")
}

// Two workers share 10 sources about evenly; when one dies, the other
// takes them all within the lease's expiry.
func TestSourcesBalanceAcrossWorkers(t *testing.T) {
	// Serial: the take-over is timed against 2 s leases; other tests on the
	// CPU would blur it.
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "sources")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	store := sourceStore(t, db)
	addr := imaptest.MemServer(t, "alice", "secret", true)
	var ids []int64
	for i := 0; i < 10; i++ {
		in := imapIntegration(addr, nil)
		in.Name = fmt.Sprint("box", i)
		if err := store.AddSourceFixture(ctx, in); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, in.ID)
	}
	held := func() map[string]int {
		out := map[string]int{}
		for _, id := range ids {
			if _, _, owner, err := store.SourceRow(ctx, id); err == nil && owner != nil {
				out[*owner]++
			}
		}
		return out
	}
	const ttl = 2 * time.Second
	start := func(owner string, s sources.Store) {
		e, err := actors.NewEngine(zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		pid, err := sources.Spawn(e, sources.Config{Store: s, Intake: noIntake{}, Owner: owner, Scan: 100 * time.Millisecond, LeaseTTL: ttl,
			Dial: netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}.DialContext})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { <-e.Poison(pid).Done() })
	}
	start("a", store)
	testsupport.WaitFor(t, time.Minute, "a holding all", func() bool { return held()["a"] == 10 })
	b := &dyingStore{SourceStore: store}
	start("b", b)
	testsupport.WaitFor(t, time.Minute, "an even share", func() bool { h := held(); return h["a"] == 5 && h["b"] == 5 })
	// Stable: nobody sheds what it was given.
	time.Sleep(time.Second)
	if h := held(); h["a"] != 5 || h["b"] != 5 {
		t.Fatalf("shares moved: %v", h)
	}
	b.dead.Store(true)
	died := time.Now()
	testsupport.WaitFor(t, 2*ttl, "a holding all again", func() bool { return held()["a"] == 10 })
	t.Logf("taken over in %v", time.Since(died).Round(10*time.Millisecond))
}
