package expo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
)

// expoRelay answers as Expo's push API does: a POST of a JSON array of at
// most 100 messages gets {"data": [tickets]}, one per message in order;
// a token "ExponentPushToken[gone-…]" is DeviceNotRegistered, one
// "ExponentPushToken[slow-…]" MessageRateExceeded, any other ok. Requests
// wait for gate.
type expoRelay struct {
	*httptest.Server
	gate     chan struct{}
	received atomic.Int32 // messages in requests received so far
	mu       sync.Mutex
	sizes    []int
}

func newExpoRelay(t *testing.T) *expoRelay {
	x := &expoRelay{gate: make(chan struct{})}
	x.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msgs []Message
		if err := json.NewDecoder(r.Body).Decode(&msgs); err != nil || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"errors":[{"code":"VALIDATION_ERROR","message":"%v"}]}`, err)
			return
		}
		if len(msgs) > 100 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"errors":[{"code":"PUSH_TOO_MANY_NOTIFICATIONS","message":"at most 100"}]}`)
			return
		}
		x.received.Add(int32(len(msgs)))
		x.mu.Lock()
		x.sizes = append(x.sizes, len(msgs))
		x.mu.Unlock()
		select {
		case <-x.gate:
		case <-r.Context().Done():
			return
		}
		type details struct {
			Error string `json:"error"`
		}
		type tk struct {
			Status  string   `json:"status"`
			ID      string   `json:"id,omitempty"`
			Message string   `json:"message,omitempty"`
			Details *details `json:"details,omitempty"`
		}
		out := struct {
			Data []tk `json:"data"`
		}{}
		for i, m := range msgs {
			switch {
			case strings.HasPrefix(m.To, "ExponentPushToken[gone-"):
				out.Data = append(out.Data, tk{Status: "error", Message: m.To + " is not a registered push notification recipient", Details: &details{Error: DeviceNotRegistered}})
			case strings.HasPrefix(m.To, "ExponentPushToken[slow-"):
				out.Data = append(out.Data, tk{Status: "error", Message: "too many messages to this device", Details: &details{Error: "MessageRateExceeded"}})
			default:
				out.Data = append(out.Data, tk{Status: "ok", ID: fmt.Sprintf("ticket-%d", i)})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(x.Close)
	return x
}

// 250 pushes made at once go to the relay in requests of at most 100
// messages, far fewer requests than pushes, and each attempt gets its own
// message's ticket: the devices answered DeviceNotRegistered, and only
// they, are deactivated without a retry; a MessageRateExceeded ticket is
// retried; the rest are delivered.
func TestPushesBatchedWithEachTicketApplied(t *testing.T) {
	t.Parallel()
	relay := newExpoRelay(t)
	settings := pushSettings{"PUSH_RELAY_URL": relay.URL, "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
	devs := &deactivated{}
	p := NewSender(settings, devs)

	const n = 250
	token := func(i int) string {
		switch i % 10 {
		case 3:
			return fmt.Sprintf("ExponentPushToken[gone-%d]", i)
		case 7:
			return fmt.Sprintf("ExponentPushToken[slow-%d]", i)
		}
		return fmt.Sprintf("ExponentPushToken[ok-%d]", i)
	}
	results := make([]docflow.DeliveryResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d := &docflow.EventDelivery{ID: int64(i), Subscriber: docflow.Subscriber{Kind: docflow.SubscriberDevice, ID: int64(i)},
				Event: docflow.Event{Name: docflow.EventDocumentProcessed, Data: map[string]any{"file_id": i}}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			results[i] = p.Send(ctx, docflow.DeliveryTarget{Found: true, Active: true, PushToken: token(i)}, d)
		})
	}
	// Every push is in a request under way or queued behind them before
	// the relay answers any.
	testsupport.WaitFor(t, time.Minute, "every push queued or sent", func() bool {
		return int(relay.received.Load())+p.batch.queued() == n
	})
	close(relay.gate)
	wg.Wait()

	relay.mu.Lock()
	sizes := slices.Clone(relay.sizes)
	relay.mu.Unlock()
	total := 0
	for _, s := range sizes {
		total += s
		if s > 100 {
			t.Errorf("a request of %d messages", s)
		}
	}
	t.Logf("%d pushes in %d requests: %v", n, len(sizes), sizes)
	if total != n || len(sizes) > maxRequests+(n+99)/100 {
		t.Errorf("%d messages in %d requests, want %d in at most %d", total, len(sizes), n, maxRequests+(n+99)/100)
	}
	var gone []int64
	for i, r := range results {
		switch i % 10 {
		case 3:
			gone = append(gone, int64(i))
			if r.Err == nil || !r.Final || !strings.Contains(r.Err.Error(), DeviceNotRegistered) {
				t.Errorf("push %d to an unregistered device: %+v", i, r)
			}
		case 7:
			if r.Err == nil || r.Final || !strings.Contains(r.Err.Error(), "MessageRateExceeded") {
				t.Errorf("push %d, rate exceeded: %+v", i, r)
			}
		default:
			if r.Err != nil || r.StatusCode != 200 {
				t.Errorf("push %d: %+v", i, r)
			}
		}
	}
	devs.mu.Lock()
	slices.Sort(devs.ids)
	if !slices.Equal(devs.ids, gone) {
		t.Errorf("deactivated %v, want %v", devs.ids, gone)
	}
	devs.mu.Unlock()
	if q := p.batch.queued(); q != 0 {
		t.Errorf("%d pushes left queued", q)
	}
}

// A request the relay refuses as a whole fails each of its attempts, to
// be retried; an attempt whose context ends while queued is not sent.
func TestPushRequestRefusedFailsEachAttempt(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"errors":[{"code":"INTERNAL_SERVER_ERROR","message":"try again"}]}`)
	}))
	defer relay.Close()
	p := NewSender(pushSettings{"PUSH_RELAY_URL": relay.URL, "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}, &deactivated{})
	tgt := docflow.DeliveryTarget{Found: true, Active: true, PushToken: "ExponentPushToken[a]"}
	d := &docflow.EventDelivery{Subscriber: docflow.Subscriber{Kind: docflow.SubscriberDevice, ID: 1}}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			r := p.Send(context.Background(), tgt, d)
			if r.Err == nil || r.Final || r.StatusCode != 503 || !strings.Contains(r.Err.Error(), "INTERNAL_SERVER_ERROR") {
				t.Errorf("refused request: %+v", r)
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := calls.Load()
	if r := p.Send(ctx, tgt, d); r.Err == nil {
		t.Errorf("cancelled attempt: %+v", r)
	}
	testsupport.WaitFor(t, time.Minute, "the cancelled push dropped", func() bool { return p.batch.queued() == 0 })
	if calls.Load() != before {
		t.Errorf("a cancelled push was sent")
	}
}
