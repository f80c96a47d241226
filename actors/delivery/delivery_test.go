package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// A receiver answering 500 twice then 200 gets the event three times,
// with the same id and body, signed both ways; it is delivered once and
// every attempt is in the log. A webhook subscribed to other events gets
// nothing.
func TestDeliveredOnThirdAttemptSigned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	other := newReceiver(t, status(http.StatusOK))
	const secret = "s3cret-of-the-receiver"
	w := e.webhook(rc.URL+"/hook", secret, docflow.EventDocumentUploaded, docflow.EventDocumentProcessed)
	e.webhook(other.URL, "", docflow.EventDocumentFailed)
	metrics := &metricLog{}
	e.start(func(c *Config) { c.Metrics = metrics })
	id := e.emit(42)

	testsupport.WaitFor(t, time.Minute, "three requests", func() bool { return len(rc.requests()) >= 3 })
	testsupport.WaitFor(t, time.Minute, "delivery recorded", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Status == docflow.DeliveryDelivered
	})
	time.Sleep(300 * time.Millisecond) // no fourth attempt
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(reqs))
	}
	wh, err := standardwebhooks.NewWebhookRaw([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if got := r.Header.Get("webhook-id"); got != id {
			t.Errorf("attempt %d: webhook-id %q, want the event id %q", i+1, got, id)
		}
		if !bytes.Equal(r.Body, reqs[0].Body) {
			t.Errorf("attempt %d: body changed: %s vs %s", i+1, r.Body, reqs[0].Body)
		}
		if err := wh.Verify(r.Body, r.Header); err != nil {
			t.Errorf("attempt %d: Standard Webhooks verification: %v", i+1, err)
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(r.Body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); r.Header.Get("X-Webhook-Signature") != want {
			t.Errorf("attempt %d: X-Webhook-Signature %q, want %q", i+1, r.Header.Get("X-Webhook-Signature"), want)
		}
	}
	if !strings.HasPrefix(string(reqs[0].Body), `{"data":{`) || !strings.Contains(string(reqs[0].Body), `},"event":"document.uploaded","timestamp":`) {
		t.Errorf("body keys not sorted: %s", reqs[0].Body)
	}
	body := decodeBody(t, reqs[0].Body)
	data := body["data"].(map[string]any)
	for k, want := range map[string]any{"file_id": float64(42), "filename": "scan.pdf", "status": "pending", "title": "Invoice", "owner_id": "alice"} {
		if data[k] != want {
			t.Errorf("data.%s = %v, want %v", k, data[k], want)
		}
	}
	if ts, ok := body["timestamp"].(float64); !ok || time.Since(time.Unix(int64(ts), 0)) > time.Minute {
		t.Errorf("timestamp %v", body["timestamp"])
	}
	// Retries waited for their tier.
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 70*time.Millisecond {
		t.Errorf("second attempt after %v, want about 100 ms", gap)
	}

	l := e.deliveries(w)[0]
	if l.EventID != id || l.Event != docflow.EventDocumentUploaded || l.Attempt != 3 || l.StatusCode == nil || *l.StatusCode != 200 || l.DeliveredAt == nil || l.NextAttemptAt != nil {
		t.Errorf("log entry %+v", l)
	}
	if len(l.Attempts) != 3 || *l.Attempts[0].StatusCode != 500 || l.Attempts[0].NextAttemptAt == nil || *l.Attempts[2].StatusCode != 200 {
		t.Errorf("attempts %+v", l.Attempts)
	}
	if len(other.requests()) != 0 {
		t.Errorf("a webhook of other events got %d requests", len(other.requests()))
	}
	got, _ := e.store.FindWebhook(context.Background(), w.ID)
	if got.FailingSince != nil || got.Failing {
		t.Errorf("webhook flagged after a success: %+v", got)
	}
	// Each attempt is measured: two 5xx failures, then the delivery.
	ms := metrics.all()
	if len(ms) != 3 {
		t.Fatalf("%d delivery metrics, want 3: %+v", len(ms), ms)
	}
	for i, m := range ms {
		want, class, code := docflow.OutcomeFailed, "http_5xx", 500
		if i == 2 {
			want, class, code = docflow.OutcomeOK, "", 200
		}
		if m.Kind != docflow.MetricDelivery || m.Status != want || m.ErrorClass != class || m.HTTPStatus != code ||
			m.Attempt != i+1 || m.Type != docflow.EventDocumentUploaded || m.Target != "webhook:"+itoa(w.ID) || m.OwnerID != "alice" {
			t.Errorf("metric %d: %+v", i+1, m)
		}
	}
}

// metricLog keeps the metrics recorded, in order.
type metricLog struct {
	mu sync.Mutex
	ms []docflow.Metric
}

func (l *metricLog) Record(m docflow.Metric) {
	l.mu.Lock()
	l.ms = append(l.ms, m)
	l.mu.Unlock()
}

func (l *metricLog) all() []docflow.Metric {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]docflow.Metric(nil), l.ms...)
}

// A receiver that hangs times out, is retried after each tier and given
// up; meanwhile another webhook's deliveries are not delayed.
func TestHangingReceiverTimesOutWithoutDelayingOthers(t *testing.T) {
	// Serial: it times the other receivers' deliveries (within 3 s); other
	// tests on the CPU would blur that.
	e := newEnv(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	fast := newReceiver(t, status(http.StatusNoContent))
	wh := e.webhook(hang.URL, "", docflow.EventDocumentUploaded)
	wf := e.webhook(fast.URL, "", docflow.EventDocumentUploaded)
	e.start(func(c *Config) {
		c.Timeout = 400 * time.Millisecond
		c.RetryDelays = c.RetryDelays[:1]
		c.PerSubscriber = 1
	})
	start := time.Now()
	for i := range 5 {
		e.emit(int64(100 + i))
	}
	testsupport.WaitFor(t, time.Minute, "the fast receiver's 5 deliveries", func() bool { return len(fast.requests()) == 5 })
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the fast receiver waited %v behind the hanging one", took)
	}
	testsupport.WaitFor(t, time.Minute, "the hanging deliveries given up", func() bool {
		l := e.deliveries(wh)
		if len(l) != 5 {
			return false
		}
		for _, d := range l {
			if d.Status != docflow.DeliveryFailed {
				return false
			}
		}
		return true
	})
	for _, d := range e.deliveries(wh) {
		if d.Attempt != 2 || d.Error == nil || !strings.Contains(*d.Error, "timed out") {
			t.Errorf("hanging delivery %+v (error %v)", d, deref(d.Error))
		}
	}
	for _, d := range e.deliveries(wf) {
		if d.Status != docflow.DeliveryDelivered || d.Attempt != 1 {
			t.Errorf("fast delivery %+v", d)
		}
	}
	got, _ := e.store.FindWebhook(context.Background(), wh.ID)
	if got.FailingSince == nil || got.Failing {
		t.Errorf("failing_since %v failing %v: want set, not yet flagged (under 24 h)", got.FailingSince, got.Failing)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Redirects are not followed (to a private address or anywhere), and a
// receiver on a private address that WEBHOOK_ALLOWED_HOSTS does not name
// is refused when the connection is made.
func TestRedirectAndPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	private := newReceiver(t, status(http.StatusOK))
	wr := e.webhook(redirect.URL, "", docflow.EventDocumentUploaded)
	// "localhost" is not in WEBHOOK_ALLOWED_HOSTS (127.0.0.1 is).
	wp := e.webhook(strings.Replace(private.URL, "127.0.0.1", "localhost", 1), "", docflow.EventDocumentUploaded)
	e.start(func(c *Config) { c.RetryDelays = []time.Duration{} })
	e.emit(7)
	for _, w := range []*docflow.Webhook{wr, wp} {
		testsupport.WaitFor(t, time.Minute, "given up", func() bool {
			l := e.deliveries(w)
			return len(l) == 1 && l[0].Status == docflow.DeliveryFailed
		})
	}
	r := e.deliveries(wr)[0]
	if r.StatusCode == nil || *r.StatusCode != http.StatusFound || !strings.Contains(deref(r.Error), "not followed") {
		t.Errorf("redirect delivery: code %v error %q", r.StatusCode, deref(r.Error))
	}
	if len(redirect.requests()) != 1 {
		t.Errorf("redirecting receiver got %d requests", len(redirect.requests()))
	}
	p := e.deliveries(wp)[0]
	if !strings.Contains(deref(p.Error), "access to private or internal addresses is not allowed") {
		t.Errorf("private delivery error %q", deref(p.Error))
	}
	if n := len(private.requests()); n != 0 {
		t.Errorf("private receiver reached %d times", n)
	}
}

// A receiver answering 2 GB is read only up to the bound: the attempt
// ends at once and counts as delivered.
func TestHugeResponseReadUpToTheBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sent := make(chan int64, 1)
	big := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "2147483648")
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 64<<10)
		var n int64
		for n < 2<<30 {
			k, err := w.Write(chunk)
			n += int64(k)
			if err != nil {
				break
			}
		}
		sent <- n
	})
	w := e.webhook(big.URL, "", docflow.EventDocumentUploaded)
	e.start(nil)
	e.emit(9)
	testsupport.WaitFor(t, time.Minute, "delivered", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Status == docflow.DeliveryDelivered
	})
	select {
	case n := <-sent:
		if n >= 1<<30 {
			t.Errorf("receiver wrote %d bytes before the connection closed", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("receiver still writing")
	}
	if d := e.deliveries(w)[0]; d.DurationMS == nil || *d.DurationMS > 5000 {
		t.Errorf("attempt took %v ms", d.DurationMS)
	}
}

// A webhook deleted while its deliveries wait for a retry: they are
// dropped and the log says why.
func TestDeletedWebhookDropsQueuedDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	w := e.webhook(rc.URL, "", docflow.EventDocumentUploaded)
	e.start(func(c *Config) { c.RetryDelays = []time.Duration{time.Second} })
	e.emit(11)
	e.emit(12)
	testsupport.WaitFor(t, time.Minute, "first attempts", func() bool { return len(rc.requests()) == 2 })
	testsupport.WaitFor(t, time.Minute, "first attempts recorded", func() bool {
		l := e.deliveries(w)
		return len(l) == 2 && l[0].Attempt == 1 && l[1].Attempt == 1
	})
	// Keep the log readable after the delete: read it through the rows.
	if err := e.store.DeleteWebhook(context.Background(), w.ID); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "dropped", func() bool {
		var n int
		_ = e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_deliveries
			WHERE subscriber = $1 AND status = 'dropped' AND last_error = 'subscriber deleted'`, "webhook:"+itoa(w.ID)).Scan(&n)
		return n == 2
	})
	time.Sleep(200 * time.Millisecond) // no request after the drop
	if n := len(rc.requests()); n != 2 {
		t.Errorf("receiver got %d requests after the delete, want none (2 in all)", n-2)
	}
}

// A process stopped with a delivery in flight acknowledged nothing: the
// next one delivers it, with the same event id.
func TestStoppedWithDeliveryInFlightDeliversAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hold := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select { // the first process dies while this request is open
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	defer close(hold)
	w := e.webhook(rc.URL, "secret", docflow.EventDocumentUploaded)
	_, stop := e.start(func(c *Config) { c.Timeout = 30 * time.Second })
	id := e.emit(21)
	testsupport.WaitFor(t, time.Minute, "the first request", func() bool { return len(rc.requests()) == 1 })
	stop(300 * time.Millisecond)
	if l := e.deliveries(w); len(l) != 1 || l[0].Attempt != 0 || l[0].Status != docflow.DeliveryPending {
		t.Fatalf("after the stop: %+v", l)
	}
	e.start(nil)
	testsupport.WaitFor(t, time.Minute, "delivered after the restart", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Status == docflow.DeliveryDelivered
	})
	reqs := rc.requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("webhook-id") != id {
			t.Errorf("webhook-id %q, want %q", r.Header.Get("webhook-id"), id)
		}
	}
}

// Redeliver makes a delivered delivery again, as a new attempt.
func TestRedeliver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, status(http.StatusOK))
	w := e.webhook(rc.URL, "", docflow.EventDocumentUploaded)
	e.start(nil)
	e.emit(31)
	testsupport.WaitFor(t, time.Minute, "delivered", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Status == docflow.DeliveryDelivered
	})
	d := e.deliveries(w)[0]
	if err := e.store.Redeliver(context.Background(), w.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "redelivered", func() bool {
		l := e.deliveries(w)
		return l[0].Status == docflow.DeliveryDelivered && l[0].Attempt == 2
	})
	if n := len(rc.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if err := e.store.Redeliver(context.Background(), w.ID+1, d.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Errorf("redeliver through another webhook: %v", err)
	}
}

// A copy of an attempt message written before its delivery's next attempt
// (the process that postponed or retried it stopped before acknowledging
// the copy, so the consumer got it again) makes no early attempt: the
// message written with the next attempt makes it when due.
func TestAttemptMessageOvertakenIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var logs testsupport.LogBuffer
	rc := newReceiver(t, failsOnce)
	w := e.webhook(rc.URL, "", docflow.EventDocumentUploaded)
	// The retry after the failed first attempt waits an hour.
	e.start(func(c *Config) {
		c.RetryDelays = []time.Duration{time.Hour}
		c.Log = zerolog.New(&logs).Level(zerolog.DebugLevel)
	})
	e.emit(32)
	var d *docflow.EventDelivery
	testsupport.WaitFor(t, time.Minute, "the first attempt failed, the retry waiting", func() bool {
		l := e.deliveries(w)
		if len(l) != 1 || l[0].Attempt != 1 {
			return false
		}
		var err error
		d, err = e.store.Delivery(context.Background(), l[0].ID)
		return err == nil && d.Status == docflow.DeliveryPending && !d.NextAttempt.IsZero()
	})
	if wait := time.Until(d.NextAttempt); wait < 50*time.Minute {
		t.Fatalf("the next attempt is due in %v, want about an hour", wait)
	}
	publish := func(due time.Time) {
		m, err := attemptMessage(attemptMsg{DeliveryID: d.ID, Attempt: 2, Due: due.UnixMilli()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.producer.Publish(context.Background(), streams.Message{Topic: m.Topic, Key: []byte(m.Key), Value: m.Payload}); err != nil {
			t.Fatal(err)
		}
	}
	// The copy: due before the next attempt.
	publish(d.NextAttempt.Add(-time.Hour))
	testsupport.WaitFor(t, time.Minute, "the copy dropped", func() bool {
		return strings.Contains(logs.String(), "overtaken by a later postponement")
	})
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("%d requests after the copy, want 1", n)
	}
	// The message of the next attempt itself (as the delay relay brings it
	// when due) makes it.
	publish(d.NextAttempt)
	testsupport.WaitFor(t, time.Minute, "delivered by the next attempt's message", func() bool {
		l := e.deliveries(w)
		return len(l) == 1 && l[0].Status == docflow.DeliveryDelivered && l[0].Attempt == 2
	})
	if n := len(rc.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A webhook whose every delivery failed for 24 h is flagged, not
// disabled; a success clears the flag.
func TestFailingFor24HoursIsFlagged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, status(http.StatusOK))
	w := e.webhook(rc.URL, "", docflow.EventDocumentUploaded)
	ctx := context.Background()
	if _, err := e.db.Pool.Exec(ctx, `UPDATE webhooks SET failing_since = now() - interval '25 hours' WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.FindWebhook(ctx, w.ID)
	if err != nil || !got.Failing || !got.IsActive {
		t.Fatalf("after 25 h of failures: %+v %v", got, err)
	}
	e.start(nil)
	e.emit(51)
	testsupport.WaitFor(t, time.Minute, "the flag cleared by a success", func() bool {
		got, _ := e.store.FindWebhook(ctx, w.ID)
		return !got.Failing && got.FailingSince == nil
	})
}

// A burst with one dead receiver: its backlog is postponed to the delay
// topic instead of filling memory and the consumer's in-flight budget, so
// the other webhook gets every event at once; the dead one's deliveries
// are all still pending or failed, none lost.
func TestDeadReceiverBacklogDoesNotHoldOthers(t *testing.T) {
	// Serial: it times the live receiver's deliveries (within 8 s); other
	// tests on the CPU would blur that.
	e := newEnv(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	dead := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	live := newReceiver(t, status(http.StatusOK))
	wd := e.webhook(dead.URL, "", docflow.EventDocumentUploaded)
	e.webhook(live.URL, "", docflow.EventDocumentUploaded)
	e.start(func(c *Config) {
		c.Timeout = 2 * time.Second
		c.RetryDelays = []time.Duration{30 * time.Second}
		c.PerSubscriber = 1
		c.MaxQueue = 2
		c.Consumer = func(cc *streams.ConsumerConfig) {
			streamstest.FastGroup(cc)
			cc.MaxInFlight = 8
		}
	})
	const n = 40
	start := time.Now()
	for i := range n {
		e.emit(int64(200 + i))
	}
	testsupport.WaitFor(t, time.Minute, "the live receiver's deliveries", func() bool { return len(live.requests()) == n })
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the live receiver waited %v", took)
	}
	if l := e.deliveries(wd); len(l) != n {
		t.Errorf("dead webhook has %d deliveries recorded, want %d", len(l), n)
	}
	var postponed int
	_ = e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_deliveries
		WHERE subscriber = $1 AND status = 'pending' AND attempts = 0 AND next_attempt IS NOT NULL`, "webhook:"+itoa(wd.ID)).Scan(&postponed)
	if postponed == 0 {
		t.Errorf("no delivery of the dead receiver was postponed")
	}
}
