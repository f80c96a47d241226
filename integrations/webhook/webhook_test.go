package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/internal/netguard"
)

type settings map[string]string

func (m settings) Get(k string) string { return m[k] }
func (m settings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no")
}
func (m settings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (m settings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m settings) Delete(context.Context, string) error { return nil }

// One attempt of each sender against a local receiver: the signed body
// and headers of a webhook, the flat body of a hook and its 410 that
// unsubscribes, a redirect that is a failed attempt, and a receiver on
// loopback refused until WEBHOOK_ALLOWED_HOSTS names it.
func TestSend(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got, bodies = append(got, r), append(bodies, b)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	st := settings{}
	ev := docflow.Event{Name: docflow.EventDocumentUploaded, Timestamp: time.Unix(1700000000, 500000000),
		Data: map[string]any{"file_id": 7, "filename": "a.pdf"}}
	d := &docflow.EventDelivery{ID: 1, EventID: "evt_1", Event: ev}
	tgt := docflow.DeliveryTarget{Found: true, Active: true, URL: srv.URL + "/hook", Secret: "s3cret"}
	ctx := context.Background()

	if r := NewSender(st).Send(ctx, tgt, d); !errors.Is(r.Err, netguard.ErrPrivate) || len(got) != 0 {
		t.Fatalf("receiver on loopback, not allowed: %+v, %d requests", r, len(got))
	}
	st["WEBHOOK_ALLOWED_HOSTS"] = "127.0.0.1"
	if r := NewSender(st).Send(ctx, tgt, d); r.Err != nil || r.StatusCode != 200 {
		t.Fatalf("webhook: %+v", r)
	}
	req, body := got[0], bodies[0]
	ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte("evt_1." + strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	if req.Header.Get("X-Webhook-Signature") != SignHex("s3cret", body) || req.Header.Get("User-Agent") != "docflow-webhooks" ||
		req.Header.Get("webhook-signature") != "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)) ||
		req.Header.Get("X-Webhook-Event") != ev.Name || req.Header.Get("webhook-id") != "evt_1" {
		t.Errorf("headers %v", req.Header)
	}
	if string(body) != `{"data":{"file_id":7,"filename":"a.pdf"},"event":"document.uploaded","timestamp":1700000000.5}` {
		t.Errorf("body %s", body)
	}

	status = http.StatusGone
	hook := NewHookSender(st)
	if r := hook.Send(ctx, tgt, d); !r.Unsubscribe || r.StatusCode != http.StatusGone {
		t.Errorf("hook answered 410: %+v", r)
	}
	var flat map[string]any
	if err := json.Unmarshal(bodies[1], &flat); err != nil || got[1].Header.Get("User-Agent") != "docflow-hooks" {
		t.Errorf("hook body %s (%v), agent %q", bodies[1], err, got[1].Header.Get("User-Agent"))
	}
	if r := NewSender(st).Send(ctx, tgt, d); r.Unsubscribe || r.StatusCode != http.StatusGone {
		t.Errorf("webhook answered 410: %+v", r)
	}

	tgt.URL = srv.URL + "/moved"
	r := NewSender(st).Send(ctx, tgt, d)
	if r.StatusCode != http.StatusFound || r.Err == nil || !strings.Contains(r.Err.Error(), "redirects are not followed") ||
		got[len(got)-1].URL.Path != "/moved" {
		t.Errorf("redirect: %+v, last request %s", r, got[len(got)-1].URL.Path)
	}
}
