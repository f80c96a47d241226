package expo

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"docflow"
	"docflow/internal/netguard"
)

type pushSettings map[string]string

func (m pushSettings) Get(k string) string { return m[k] }
func (m pushSettings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no")
}
func (m pushSettings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (m pushSettings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m pushSettings) Delete(context.Context, string) error { return nil }

type deactivated struct {
	mu  sync.Mutex
	ids []int64
}

func (d *deactivated) DeactivateDevice(_ context.Context, id int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, id)
	return nil
}

// The push sender against a relay answering as Expo's API: an ok ticket
// delivers; DeviceNotRegistered deactivates the device and ends the
// delivery (Final); a refused request or another ticket error is retried;
// a relay on a private address is refused unless WEBHOOK_ALLOWED_HOSTS
// names it.
func TestPushSender(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var status atomic.Int32
	var answer atomic.Value
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		if !strings.HasPrefix(string(b), `[{"to":"ExponentPushToken[abc]"`) || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(400)
			return
		}
		w.WriteHeader(int(status.Load()))
		io.WriteString(w, answer.Load().(string)) //nolint:errcheck
	}))
	defer relay.Close()
	settings := pushSettings{"PUSH_RELAY_URL": relay.URL}
	devs := &deactivated{}
	p := NewSender(settings, devs)
	d := &docflow.EventDelivery{ID: 1, Subscriber: docflow.Subscriber{Kind: docflow.SubscriberDevice, ID: 42},
		Event: docflow.Event{Name: docflow.EventDocumentProcessed, Data: map[string]any{"file_id": 7, "filename": "a.pdf"}}}
	tgt := docflow.DeliveryTarget{Found: true, Active: true, PushToken: "ExponentPushToken[abc]"}
	ctx := context.Background()

	status.Store(200)
	answer.Store(`{"data":[{"status":"ok","id":"x"}]}`)
	if r := p.Send(ctx, tgt, d); r.Err == nil || !errors.Is(r.Err, netguard.ErrPrivate) || calls.Load() != 0 {
		t.Fatalf("relay on loopback, not allowed: %+v, %d calls", r, calls.Load())
	}
	settings["WEBHOOK_ALLOWED_HOSTS"] = "127.0.0.1"
	if r := p.Send(ctx, tgt, d); r.Err != nil || r.StatusCode != 200 || r.Final {
		t.Errorf("ok ticket: %+v", r)
	}
	answer.Store(`{"data":[{"status":"error","message":"not registered","details":{"error":"DeviceNotRegistered"}}]}`)
	if r := p.Send(ctx, tgt, d); r.Err == nil || !r.Final || len(devs.ids) != 1 || devs.ids[0] != 42 {
		t.Errorf("DeviceNotRegistered: %+v, deactivated %v", r, devs.ids)
	}
	answer.Store(`{"data":[{"status":"error","message":"slow down","details":{"error":"MessageRateExceeded"}}]}`)
	if r := p.Send(ctx, tgt, d); r.Err == nil || r.Final || !strings.Contains(r.Err.Error(), "MessageRateExceeded") {
		t.Errorf("MessageRateExceeded: %+v", r)
	}
	status.Store(429)
	answer.Store(`{"errors":[{"code":"TOO_MANY_REQUESTS","message":"rate"}]}`)
	if r := p.Send(ctx, tgt, d); r.Err == nil || r.Final || r.StatusCode != 429 || !strings.Contains(r.Err.Error(), "TOO_MANY_REQUESTS") {
		t.Errorf("429: %+v", r)
	}
	status.Store(200)
	answer.Store(`<html>`)
	if r := p.Send(ctx, tgt, d); r.Err == nil || r.Final {
		t.Errorf("no ticket: %+v", r)
	}
}

func TestMessageFor(t *testing.T) {
	t.Parallel()
	m := MessageFor("T[x]", docflow.Event{Data: map[string]any{"file_id": 9, "filename": strings.Repeat("é", 300), "title": "secret"}})
	if m.To != "T[x]" || m.Data["file_id"] != 9 || len(m.Data) != 1 || utf8.RuneCountInString(m.Body) > 120 || strings.Contains(m.Body, "secret") {
		t.Errorf("%+v", m)
	}
}
