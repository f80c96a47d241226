package delivery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/streams"
)

// countingReceiver counts the distinct event ids it was sent (at least
// once: a copy counts once) and when it saw the last new one.
type countingReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]bool
	last time.Time
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	rc := &countingReceiver{seen: map[string]bool{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		if !rc.seen[id] {
			rc.seen[id] = true
			rc.last = time.Now()
		}
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *countingReceiver) count() (int, time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen), rc.last
}

// 3,000 events in a burst to three live receivers and one that never
// answers: the live ones get every event, and the dead one holds at most
// MaxQueue + PerSubscriber deliveries in memory at any time (and those
// on their way to its queue), a fifth of the burst — the rest are
// postponed to the retry topic at once, so they hold neither memory nor
// the consumer's in-flight budget the live ones need.
func TestBurstWithDeadReceiverDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	n := 3000
	if testing.Short() {
		n = 1500
	}
	e := newEnv(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	dead := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	wd := e.webhook(dead.URL, "", docflow.EventDocumentUploaded)
	var live []*countingReceiver
	for range 3 {
		rc := newCountingReceiver(t)
		e.webhook(rc.URL, "", docflow.EventDocumentUploaded)
		live = append(live, rc)
	}
	const maxQueue, slots = 64, 8
	s, _ := e.start(func(c *Config) {
		c.Timeout = 5 * time.Second
		c.StallAfter = 500 * time.Millisecond
		// A live receiver answering slowly on a loaded machine (an
		// attempt of StallAfter/4) is shed to the retry tier too, as a
		// slow receiver is: a short delay brings those back soon.
		c.RetryDelays = []time.Duration{5 * time.Second}
		c.MaxQueue, c.PerSubscriber = maxQueue, slots
	})

	// The burst: the events committed in chunks of 500.
	start := time.Now()
	owner, title := "alice", "Invoice"
	for lo := 0; lo < n; lo += 500 {
		msgs := make([]docflow.OutboxMessage, 0, 500)
		for i := lo; i < min(lo+500, n); i++ {
			f := &docflow.File{ID: int64(10000 + i), OriginalFilename: "scan.pdf", Status: "pending", OwnerID: &owner, DocumentTitle: &title}
			m, err := streams.DocumentUploaded(f, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
		if err := e.outbox.Enqueue(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	committed := time.Since(start)

	// While the burst drains, the dead receiver's deliveries held in
	// memory (recorded, neither attempted nor postponed) stay bounded.
	sub := "webhook:" + itoa(wd.ID)
	held := func() int {
		var k int
		_ = e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_deliveries
			WHERE subscriber = $1 AND status = 'pending' AND attempts = 0 AND next_attempt IS NULL`, sub).Scan(&k)
		return k
	}
	peakHeld := 0
	progress := time.Now()
	testsupport.WaitFor(t, 300*time.Second, "every live receiver's deliveries", func() bool {
		if h := held(); h > peakHeld {
			peakHeld = h
		}
		if time.Since(progress) > 5*time.Second {
			progress = time.Now()
			c, _ := live[0].count()
			t.Logf("%v: live receiver got %d of %d; dead receiver holds %d", time.Since(start).Round(time.Second), c, n, peakHeld)
		}
		for _, rc := range live {
			if c, _ := rc.count(); c < n {
				return false
			}
		}
		return true
	})
	var lastLive time.Time
	for _, rc := range live {
		if _, l := rc.count(); l.After(lastLive) {
			lastLive = l
		}
	}
	took := lastLive.Sub(start)
	t.Logf("%d events committed in %v; %d live deliveries in %v (%.0f/s); dead receiver: at most %d held, peak queue of any subscriber %d",
		n, committed.Round(time.Millisecond), 3*n, took.Round(time.Millisecond), float64(3*n)/took.Seconds(), peakHeld, s.peakQueue.Load())
	// A slack for the deliveries between the fan-out's commit and their
	// actor's queue.
	if bound := maxQueue + slots + 512; peakHeld > bound {
		t.Errorf("the dead receiver held up to %d deliveries, want at most %d", peakHeld, bound)
	}
	var postponed int
	_ = e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_deliveries
		WHERE subscriber = $1 AND status = 'pending' AND attempts = 0 AND next_attempt IS NOT NULL`, sub).Scan(&postponed)
	if postponed < n/2 {
		t.Errorf("%d of the dead receiver's %d deliveries postponed, want most", postponed, n)
	}
}
