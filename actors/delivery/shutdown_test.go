package delivery

import (
	"context"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
)

// A retry held by the delay relay does not hold the service's Close: the
// relay releases it unacknowledged, Close returns well before its
// deadline, and the next process (here the same one started again)
// delivers the retry when it is due.
func TestCloseReleasesHeldRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, failsOnce)
	w := e.webhook(rc.URL, "", docflow.EventDocumentUploaded)
	// The retry is due long after the service is stopped, and soon enough
	// for the restarted one to make it within the test.
	slow := func(c *Config) { c.RetryDelays = []time.Duration{8 * time.Second} }
	s, _ := e.start(slow)
	id := e.emit(41)
	testsupport.WaitFor(t, 20*time.Second, "the retry held by the delay relay", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Attempt == 1 && l[0].Status == docflow.DeliveryPending && s.delay.InFlight() > 0
	})
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests before the stop: the retry was due before this test could stop the service", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Close(ctx); err != nil {
		t.Errorf("close: %v", err)
	}
	d := time.Since(start)
	t.Logf("closed in %v with a retry held", d)
	if d > 5*time.Second {
		t.Fatalf("Close took %v with a retry held (its deadline 20 s)", d)
	}

	e.start(slow)
	testsupport.WaitFor(t, 30*time.Second, "the retry delivered after the restart", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Status == docflow.DeliveryDelivered
	})
	reqs := rc.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want the first and its retry", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("webhook-id") != id {
			t.Errorf("webhook-id %q, want %q", r.Header.Get("webhook-id"), id)
		}
	}
	if l := e.deliveries(w); l[0].Attempt != 2 {
		t.Fatalf("delivery %+v: want delivered at the second attempt", l[0])
	}
}
