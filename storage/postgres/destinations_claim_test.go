package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

// One delivery is attempted by one claim at a time: of two concurrent
// starts (two copies of its task, or two processes) one gets the task and
// the other is told the claim's lease; a delivery done is stale; a claim
// whose process died is taken over once its lease ended, one renewed is
// not; a claim given back is taken at once.
func TestDestinationClaims(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := OpenTestDB(ctx, "destclaim")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	db.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	c, err := NewCipher(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	// Two stores on one database, as two processes have.
	s1, s2 := NewDestinationStore(db, c, destinationTask), NewDestinationStore(db, c, destinationTask)
	in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionDestination, IntegrationType: docflow.IntegrationWebDAV,
		Name: "A", Config: map[string]any{"url": "https://dav.example.com"}, Credentials: map[string]string{"password": "pw"}, IsActive: true}
	if err := NewIntegrationStore(db, c).CreateIntegration(ctx, in, true); err != nil {
		t.Fatal(err)
	}
	owner := "ann"
	f := &docflow.File{OriginalFilename: "x.pdf", OwnerID: &owner}
	if err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, owner_id)
		VALUES ('h', 'x.pdf', 'x.pdf', 1, 'application/pdf', 'ann') RETURNING id`).Scan(&f.ID); err != nil {
		t.Fatal(err)
	}
	q, err := s1.EnqueueFileDeliveries(ctx, f, "ann", "run-1", nil)
	if err != nil || len(q) != 1 {
		t.Fatalf("enqueue: %+v %v", q, err)
	}
	var id int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM file_destinations WHERE integration_id = $1`, in.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	const lease = time.Minute
	attempts := func() (n int) {
		if err := db.Pool.QueryRow(ctx, `SELECT attempts FROM file_destinations WHERE id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// Concurrent starts, from both stores: exactly one task.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		tasks   []*docflow.DeliveryTask
		claimed []time.Time
	)
	for i := range 8 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, err := s.StartDelivery(ctx, id, in.ID, 1, 1, lease)
			var ce *docflow.DeliveryClaimedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.As(err, &ce):
				claimed = append(claimed, ce.Until)
			case err != nil:
				t.Error(err)
			case task != nil:
				tasks = append(tasks, task)
			}
		}()
	}
	wg.Wait()
	if len(tasks) != 1 || len(claimed) != 7 || tasks[0].Claim == 0 || tasks[0].Attempt != 1 || attempts() != 1 {
		t.Fatalf("concurrent starts: %d tasks (%+v), %d told claimed, %d attempts", len(tasks), tasks, len(claimed), attempts())
	}
	for _, u := range claimed {
		if !u.Equal(db.Now().Add(lease).Truncate(time.Microsecond)) {
			t.Fatalf("claimed until %v, want %v", u, db.Now().Add(lease))
		}
	}
	first := tasks[0]

	// Renewed, the claim holds past its first lease.
	advance(lease / 2)
	if err := s1.RenewDeliveryClaims(ctx, []int64{first.Claim}, lease); err != nil {
		t.Fatal(err)
	}
	advance(lease * 3 / 4)
	if task, err := s2.StartDelivery(ctx, id, in.ID, 1, 1, lease); task != nil || !errors.As(err, new(*docflow.DeliveryClaimedError)) {
		t.Fatalf("start during a renewed lease: %+v %v", task, err)
	}

	// Its process died: no more renewals; once the lease ended another
	// takes the delivery over, with a new claim.
	advance(lease/4 + time.Second)
	taken, err := s2.StartDelivery(ctx, id, in.ID, 1, 1, lease)
	if err != nil || taken == nil || taken.Claim == first.Claim || taken.Attempt != 2 {
		t.Fatalf("takeover: %+v %v", taken, err)
	}
	// The dead claim's renewal (a late one) extends nothing.
	if err := s1.RenewDeliveryClaims(ctx, []int64{first.Claim}, 10*lease); err != nil {
		t.Fatal(err)
	}
	// Nor does its outcome, the process resumed (it was paused, not dead):
	// the delivery is the takeover's, and its log gets no line.
	if ok, err := s1.FinishDelivery(ctx, docflow.DeliveryOutcome{DeliveryID: id, FileID: f.ID, IntegrationID: in.ID, Request: 1,
		Attempt: first.Attempt, Claim: first.Claim, Status: docflow.DestinationDelivered, RemotePath: "x.pdf",
		Log: "Delivered by the paused attempt", At: db.Now()}, nil); err != nil || ok {
		t.Fatalf("the taken-over attempt's outcome: recorded %v, %v", ok, err)
	}
	var status string
	var logged int
	if err := db.Pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM processing_logs WHERE message LIKE '%paused attempt%')
		FROM file_destinations WHERE id = $1`, id).Scan(&status, &logged); err != nil || status != "sending" || logged != 0 {
		t.Fatalf("after the taken-over attempt's outcome: status %q, %d log lines, %v", status, logged, err)
	}
	advance(lease + time.Second)
	if err := s2.ReleaseDeliveryClaims(ctx, []int64{taken.Claim}); err != nil {
		t.Fatal(err)
	}
	// Given back (not attempted): taken at once, the attempt not counted.
	again, err := s1.StartDelivery(ctx, id, in.ID, 1, 1, lease)
	if err != nil || again == nil || again.Attempt != 2 {
		t.Fatalf("start after a release: %+v %v", again, err)
	}

	// Failed, to be retried: a copy of a task asking for an attempt made
	// (the first's, or the one just failed) is stale while the delivery
	// waits; the retry's task, asking for the next, starts it; a task
	// naming no attempt starts whichever is next.
	next := db.Now().Add(lease)
	if ok, err := s1.FinishDelivery(ctx, docflow.DeliveryOutcome{DeliveryID: id, FileID: f.ID, IntegrationID: in.ID, Request: 1,
		Attempt: again.Attempt, Status: docflow.DestinationRetrying, Error: "503", NextAttemptAt: &next, Log: "Failed",
		At: db.Now()}, nil); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	for _, n := range []int{1, 2} {
		if task, err := s2.StartDelivery(ctx, id, in.ID, 1, n, lease); err != nil || task != nil || attempts() != 2 {
			t.Fatalf("a copy asking for attempt %d during the retry's wait: %+v %v", n, task, err)
		}
	}
	retried, err := s2.StartDelivery(ctx, id, in.ID, 1, 3, lease)
	if err != nil || retried == nil || retried.Attempt != 3 {
		t.Fatalf("the retry: %+v %v", retried, err)
	}
	// While it is sent, an older copy is stale, not told to wait.
	if task, err := s1.StartDelivery(ctx, id, in.ID, 1, 2, lease); err != nil || task != nil {
		t.Fatalf("an older copy during the retry: %+v %v", task, err)
	}
	if err := s2.ReleaseDeliveryClaims(ctx, []int64{retried.Claim}); err != nil {
		t.Fatal(err)
	}
	legacy, err := s1.StartDelivery(ctx, id, in.ID, 1, 0, lease)
	if err != nil || legacy == nil || legacy.Attempt != 3 {
		t.Fatalf("a task naming no attempt: %+v %v", legacy, err)
	}

	// Delivered: every later copy is stale.
	if ok, err := s1.FinishDelivery(ctx, docflow.DeliveryOutcome{DeliveryID: id, FileID: f.ID, IntegrationID: in.ID, Request: 1,
		Attempt: legacy.Attempt, Status: docflow.DestinationDelivered, RemotePath: "/x.pdf", Log: "Delivered", At: db.Now()}, nil); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	advance(10 * lease)
	for _, n := range []int{0, 1, 4} {
		if task, err := s2.StartDelivery(ctx, id, in.ID, 1, n, lease); err != nil || task != nil {
			t.Fatalf("start of attempt %d after delivery: %+v %v", n, task, err)
		}
	}
}
