package delivery

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
)

// A receiver that hangs on some events holds up only those: with
// WEBHOOK_CONCURRENCY 3 and two events hanging past StallAfter, a third
// event refused once is retried when its retry is due, and newer events to
// the same receiver are delivered at once (neither waits in a queue nor is
// postponed); another receiver gets every event at once; never more than
// three attempts run against the receiver at a time; the retry carries the
// event's id.
func TestReceiverHangingOnSomeEventsHoldsUpOnlyThose(t *testing.T) {
	// Serial: it times deliveries to the second; other tests on the CPU
	// would blur that.
	e := newEnv(t)
	if _, err := e.settings.Set(context.Background(), "WEBHOOK_CONCURRENCY", "3"); err != nil {
		t.Fatal(err)
	}
	const hangA, hangB, refused = 1, 2, 3
	var inFlight, maxInFlight atomic.Int32
	var refusedOnce atomic.Bool
	release := make(chan struct{})
	var self atomic.Pointer[receiver]
	slow := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		k := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxInFlight.Load(); k > m && !maxInFlight.CompareAndSwap(m, k); m = maxInFlight.Load() {
		}
		switch fileID(t, self.Load().requests()[n-1].Body) {
		case hangA, hangB:
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case refused:
			if refusedOnce.CompareAndSwap(false, true) {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	self.Store(slow)
	t.Cleanup(func() { close(release) }) // before the receiver closes
	other := newReceiver(t, status(http.StatusOK))
	ws := e.webhook(slow.URL, "", docflow.EventDocumentUploaded)
	e.webhook(other.URL, "", docflow.EventDocumentUploaded)
	const retryAfter = 4 * time.Second
	e.start(func(c *Config) {
		c.Timeout = time.Minute // the hanging attempts outlast the test
		c.StallAfter = time.Second
		c.RetryDelays = []time.Duration{retryAfter}
	})

	emitted := map[int64]time.Time{}
	for _, id := range []int64{hangA, hangB, refused} {
		emitted[id] = time.Now()
		e.emit(id)
	}
	testsupport.WaitFor(t, time.Minute, "the refused event's first attempt", func() bool {
		for _, d := range e.deliveries(ws) {
			if d.Attempt == 1 && len(d.Attempts) == 1 && d.Attempts[0].NextAttemptAt != nil {
				return true
			}
		}
		return false
	})
	// Past StallAfter: the two hanging attempts count as stalled.
	testsupport.WaitFor(t, time.Minute, "the hanging attempts past StallAfter", func() bool {
		return time.Since(emitted[hangB]) > 2*time.Second
	})
	for id := int64(10); id < 16; id++ {
		emitted[id] = time.Now()
		e.emit(id)
	}
	testsupport.WaitFor(t, time.Minute, "every event but the hanging ones delivered", func() bool {
		n := 0
		for _, d := range e.deliveries(ws) {
			if d.Status == docflow.DeliveryDelivered {
				n++
			}
		}
		return n == 7
	})

	// Each delivered event went out when it was due, with its event id.
	firsts := map[int64]request{}
	var retry []request
	for _, r := range slow.requests() {
		id := fileID(t, r.Body)
		if _, ok := firsts[id]; !ok {
			firsts[id] = r
		} else {
			retry = append(retry, r)
		}
	}
	const slack = 1500 * time.Millisecond
	for id, r := range firsts {
		if id >= 10 {
			if late := r.At.Sub(emitted[id]); late > slack {
				t.Errorf("event %d reached the receiver %v after it was emitted", id, late)
			}
		}
	}
	if len(retry) != 1 || retry[0].Header.Get("webhook-id") != firsts[refused].Header.Get("webhook-id") {
		t.Fatalf("%d repeated requests (want the refused event's retry, with its id)", len(retry))
	}
	for _, d := range e.deliveries(ws) {
		switch {
		case d.Attempt == 2:
			due := *d.Attempts[0].NextAttemptAt
			if late := retry[0].At.Sub(due); late > slack {
				t.Errorf("the retry was sent %v after it was due", late)
			}
		case d.Status == docflow.DeliveryDelivered && d.Attempt != 1:
			t.Errorf("delivery %+v: want delivered at the first attempt", d)
		}
	}
	// The other receiver got every event at once.
	got := other.requests()
	if len(got) != 9 {
		t.Errorf("the other receiver got %d events, want 9", len(got))
	}
	for _, r := range got {
		id := fileID(t, r.Body)
		if late := r.At.Sub(emitted[id]); late > slack {
			t.Errorf("event %d reached the other receiver %v after it was emitted", id, late)
		}
	}
	if m := maxInFlight.Load(); m > 3 {
		t.Errorf("%d attempts at once to one receiver, WEBHOOK_CONCURRENCY is 3", m)
	}
	if n := inFlight.Load(); n != 2 {
		t.Errorf("%d attempts under way at the end, want the two hanging ones", n)
	}
}

// fileID reads the file id of a delivered event's body.
func fileID(t *testing.T, b []byte) int64 {
	var body struct {
		Data struct {
			FileID int64 `json:"file_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Errorf("event body %q: %v", b, err)
	}
	return body.Data.FileID
}
