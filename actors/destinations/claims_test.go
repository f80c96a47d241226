package destinations

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/streams"
)

// claimLog wraps the store and records each process's StartDelivery
// answers, by delivery: "task", "claimed" or "stale".
type claimLog struct {
	Store
	mu      sync.Mutex
	answers map[int64][]string
	// started, when set, hears each task handed out.
	started func(*docflow.DeliveryTask)
}

func (c *claimLog) StartDelivery(ctx context.Context, id, integrationID, request int64, attempt int, lease time.Duration) (*docflow.DeliveryTask, error) {
	t, err := c.Store.StartDelivery(ctx, id, integrationID, request, attempt, lease)
	a := "stale"
	switch {
	case errors.As(err, new(*docflow.DeliveryClaimedError)):
		a = "claimed"
	case err != nil:
		return t, err
	case t != nil:
		a = "task"
		if c.started != nil {
			c.started(t)
		}
	}
	c.mu.Lock()
	c.answers[id] = append(c.answers[id], a)
	c.mu.Unlock()
	return t, err
}

func (c *claimLog) of(id int64) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.answers[id]...)
}

// settled: the process got a task for the delivery, or found it stale.
func (c *claimLog) settled(id int64) bool {
	a := c.of(id)
	return len(a) > 0 && a[len(a)-1] != "claimed"
}

// One delivery task given twice to each of two processes (each its own
// consumer group, so both own the partition), the copies arriving while
// the first attempt is under way: the document is sent once, one
// "Delivered" line is logged; a process that holds the task drops the
// copy without asking storage, and the other waits for the claim's lease
// and then finds the delivery done.
func TestCopiesOfOneTaskDeliverOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	d.setHook(func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if n == 1 {
			once.Do(func() { close(started) })
			<-release
		}
		return false
	})
	logs := []*claimLog{{Store: e.store, answers: map[int64][]string{}}, {Store: e.store, answers: map[int64][]string{}}}
	for i, l := range logs {
		e.start(func(c *Config) {
			c.Store, c.GroupID, c.ClaimLease = l, fmt.Sprintf("dest-copies-%d", i), time.Second
		})
	}
	share := e.davIntegration(d, "Share", "/in", "p", nil)
	f := e.file("once.pdf", "", []byte("once"))
	e.enqueue(f, "run-1")
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("the upload did not start")
	}
	// The copy, as a republish after a fault makes it; then a later task
	// on the same partition, which each process gets after the copy.
	id := e.publishCopy(t, share.ID, f.ID)
	g := e.file("later.pdf", "", []byte("later"))
	e.enqueue(g, "run-1")
	var gid int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT id FROM file_destinations WHERE file_id = $1`, g.ID).Scan(&gid); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "both processes ask for the later task", func() bool {
		return len(logs[0].of(gid)) > 0 && len(logs[1].of(gid)) > 0
	})
	close(release)
	e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	e.waitStatus(g, share, docflow.DestinationDelivered, time.Minute)
	testsupport.WaitFor(t, time.Minute, "both processes settled", func() bool {
		return logs[0].settled(id) && logs[1].settled(id) && logs[0].settled(gid) && logs[1].settled(gid)
	})
	tasks := 0
	for i, l := range logs {
		a := l.of(id)
		t.Logf("process %d: %v", i, a)
		if a[0] == "task" {
			tasks++
			if len(a) != 1 {
				t.Fatalf("the process sending asked again for a copy: %v", a)
			}
		}
	}
	if tasks != 1 {
		t.Fatalf("%d attempts started", tasks)
	}
	if names := d.files(t, "in"); len(names) != 2 || d.puts.Load() != 2 {
		t.Fatalf("share holds %v after %d PUTs", names, d.puts.Load())
	}
	delivered := 0
	for _, l := range append(e.logs(f), e.logs(g)...) {
		if strings.HasPrefix(l, "completed: Delivered to Share") {
			delivered++
		}
	}
	if delivered != 2 {
		t.Fatalf("logs %q %q", e.logs(f), e.logs(g))
	}
	if ds := e.destinations(f)[share.ID]; ds.Attempts != 1 {
		t.Fatalf("delivery %+v", ds)
	}
}

// A copy of a delivery task that arrives while its delivery waits for a
// retry (the outbox or a producer published the task again after a
// fault) starts no attempt: storage's record says the attempt it asks
// for was made. The retry is made once due, once, and the one chain of
// retries goes on to the delivery.
func TestCopyDuringRetryWaitStartsNoAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	var failing atomic.Bool
	failing.Store(true)
	d.setHook(func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if failing.Load() {
			io.Copy(io.Discard, r.Body) //nolint:errcheck // answered at once
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	// Each attempt started notes when, and the due time its delivery's
	// record held then (next_attempt_at, written with the previous
	// attempt's failure; starting an attempt leaves it).
	type start struct {
		attempt int
		at      time.Time
		due     *time.Time
	}
	var mu sync.Mutex
	var starts []start
	claims := &claimLog{Store: e.store, answers: map[int64][]string{}, started: func(task *docflow.DeliveryTask) {
		s := start{attempt: task.Attempt, at: time.Now()}
		if err := e.db.Pool.QueryRow(context.Background(), `SELECT next_attempt_at FROM file_destinations WHERE id = $1`,
			task.DeliveryID).Scan(&s.due); err != nil {
			t.Error(err)
		}
		mu.Lock()
		starts = append(starts, s)
		mu.Unlock()
	}}
	// The first retry waits long enough for the copy to be handled well
	// before it is due; the others little.
	e.start(func(c *Config) {
		c.Store, c.RetryDelays = claims, []time.Duration{5 * time.Second, 200 * time.Millisecond, 200 * time.Millisecond}
	})
	share := e.davIntegration(d, "Share", "/in", "p", nil)
	f := e.file("wait.pdf", "", []byte("wait"))
	e.enqueue(f, "run-1")
	first := e.waitStatus(f, share, docflow.DestinationRetrying, 20*time.Second)
	if first.Attempts != 1 || first.NextAttemptAt == nil {
		t.Fatalf("after the first attempt: %+v", first)
	}
	id := e.publishCopy(t, share.ID, f.ID)
	testsupport.WaitFor(t, 20*time.Second, "the copy handled", func() bool { return len(claims.of(id)) >= 2 })
	if !time.Now().Before(*first.NextAttemptAt) {
		t.Fatalf("the copy was handled after the retry was due (%v): too late for this test to tell", first.NextAttemptAt)
	}
	failing.Store(false)
	e.waitStatus(f, share, docflow.DestinationDelivered, 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range starts {
		t.Logf("attempt %d started at %s, due %v", s.attempt, s.at.Format("15:04:05.000"), s.due)
		if s.attempt > 1 && (s.due == nil || s.at.Before(*s.due)) {
			t.Errorf("attempt %d started before its retry was due", s.attempt)
		}
	}
	if ds := e.destinations(f)[share.ID]; len(starts) != 2 || ds.Attempts != 2 {
		t.Fatalf("%d attempts started (%v), delivery %+v: want the first and its retry", len(starts), claims.of(id), ds)
	}
}

// publishCopy publishes a copy of the first task of file's delivery to
// integration (as a republish after a fault makes one) and returns the
// delivery's id.
func (e *env) publishCopy(t *testing.T, integration, file int64) int64 {
	t.Helper()
	var id int64
	if err := e.db.Pool.QueryRow(e.ctx, `SELECT id FROM file_destinations WHERE file_id = $1`, file).Scan(&id); err != nil {
		t.Fatal(err)
	}
	m, err := TaskMessage(integration, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.producer.Publish(e.ctx, streams.Message{Topic: m.Topic, Key: []byte(m.Key), Value: m.Payload}); err != nil {
		t.Fatal(err)
	}
	return id
}
