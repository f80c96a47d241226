package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

func call(t *testing.T, method, url string, body any) (int, map[string]any, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := nethttp.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return resp.StatusCode, m, string(b)
}

// The webhooks API end to end: validation of events and URLs, the secret
// never returned; a document uploaded and processed reaches the webhook as
// document.uploaded and document.processed, signed; the delivery log lists
// both, a redelivery sends one again; a deleted webhook is gone.
func TestWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{
		"ENABLE_TEST_STEP": "true", "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,0.2"}})

	var mu sync.Mutex
	var got []*nethttp.Request
	var bodies [][]byte
	rc := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer rc.Close()
	received := func() ([]*nethttp.Request, [][]byte) {
		mu.Lock()
		defer mu.Unlock()
		return append([]*nethttp.Request(nil), got...), append([][]byte(nil), bodies...)
	}

	base := a.URL + "/api/webhooks/"
	status, body, raw := call(t, "GET", base+"events/", nil)
	if status != 200 || !strings.Contains(raw, `"document.processed"`) {
		t.Fatalf("events: %d %s", status, raw)
	}
	for _, bad := range []struct {
		req  map[string]any
		want string
	}{
		{map[string]any{"url": rc.URL, "events": []string{"document.uploaded", "file.updated"}}, `file.updated`},
		{map[string]any{"url": rc.URL}, "events is required"},
		{map[string]any{"url": "ftp://example.com/x", "events": []string{"document.uploaded"}}, "http or https"},
		{map[string]any{"url": "http://10.1.2.3/hook", "events": []string{"document.uploaded"}}, "access to private or internal addresses is not allowed"},
		{map[string]any{"url": "http://localhost:8080/hook", "events": []string{"document.uploaded"}}, "access to private or internal addresses is not allowed"},
		{map[string]any{"url": "http://[::1]/hook", "events": []string{"document.uploaded"}}, "access to private or internal addresses is not allowed"},
	} {
		if status, _, raw := call(t, "POST", base, bad.req); status != 422 || !strings.Contains(raw, bad.want) {
			t.Errorf("POST %v: %d %s (want 422 naming %q)", bad.req, status, raw, bad.want)
		}
	}

	const secret = "whsec-plain-bytes"
	status, body, raw = call(t, "POST", base, map[string]any{"url": rc.URL + "/in", "secret": secret,
		"events": []string{"document.processed", "document.uploaded"}, "description": "ops"})
	if status != 201 || body["has_secret"] != true || strings.Contains(raw, secret) || body["is_active"] != true {
		t.Fatalf("create: %d %s", status, raw)
	}
	id := int64(body["id"].(float64))
	hook := fmt.Sprintf("%s%d", base, id)
	if status, body, raw := call(t, "PUT", hook, map[string]any{"description": "operations"}); status != 200 || body["description"] != "operations" || body["has_secret"] != true {
		t.Fatalf("update: %d %s", status, raw)
	}
	if status, _, raw := call(t, "GET", base, nil); status != 200 || !strings.Contains(raw, `"operations"`) || strings.Contains(raw, secret) {
		t.Fatalf("list: %d %s", status, raw)
	}

	ctx := context.Background()
	p := &docflow.Pipeline{Name: "one test step", IsDefault: true, IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "drill", Enabled: true,
			Config: map[string]any{"title": "The quokka report"}}}}
	if err := postgres.NewPipelineStore(a.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	fileID := upload(t, a.URL, "hooked.txt", "a document\n")
	testsupport.WaitFor(t, 3*time.Minute, "document.uploaded and document.processed received", func() bool {
		r, _ := received()
		return len(r) >= 2
	})
	reqs, bs := received()
	wh, _ := standardwebhooks.NewWebhookRaw([]byte(secret))
	events := map[string]map[string]any{}
	for i, r := range reqs {
		if err := wh.Verify(bs[i], r.Header); err != nil {
			t.Errorf("signature of %s: %v", bs[i], err)
		}
		var m map[string]any
		if err := json.Unmarshal(bs[i], &m); err != nil {
			t.Fatal(err)
		}
		events[m["event"].(string)] = m["data"].(map[string]any)
	}
	for _, name := range []string{docflow.EventDocumentUploaded, docflow.EventDocumentProcessed} {
		d, ok := events[name]
		if !ok || d["file_id"] != float64(fileID) || d["filename"] != "hooked.txt" {
			t.Errorf("%s: %v", name, d)
		}
	}
	if d := events[docflow.EventDocumentProcessed]; d["status"] != docflow.StatusCompleted {
		t.Errorf("document.processed status %v", d["status"])
	}

	var log struct {
		Deliveries []docflow.DeliveryLogEntry `json:"deliveries"`
		Total      int                        `json:"total"`
		Pages      int                        `json:"pages"`
	}
	testsupport.WaitFor(t, 3*time.Minute, "both deliveries logged as delivered", func() bool {
		_, _, raw := call(t, "GET", hook+"/deliveries?per_page=10", nil)
		if json.Unmarshal([]byte(raw), &log) != nil || log.Total != 2 {
			return false
		}
		for _, d := range log.Deliveries {
			if d.Status != docflow.DeliveryDelivered {
				return false
			}
		}
		return true
	})
	if log.Pages != 1 || log.Deliveries[0].Attempt != 1 || log.Deliveries[0].StatusCode == nil || *log.Deliveries[0].StatusCode != 200 {
		t.Errorf("log %+v", log)
	}
	if status, _, raw := call(t, "POST", fmt.Sprintf("%s/deliveries/%d/redeliver", hook, log.Deliveries[0].ID), nil); status != 202 {
		t.Fatalf("redeliver: %d %s", status, raw)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the redelivery", func() bool { r, _ := received(); return len(r) == 3 })
	if r, _ := received(); r[2].Header.Get("webhook-id") != log.Deliveries[0].EventID {
		t.Errorf("redelivery webhook-id %q, want %q", r[2].Header.Get("webhook-id"), log.Deliveries[0].EventID)
	}
	if status, _, raw := call(t, "POST", fmt.Sprintf("%s/deliveries/%d/redeliver", hook, log.Deliveries[0].ID+1000), nil); status != 404 {
		t.Errorf("redeliver unknown: %d %s", status, raw)
	}

	if status, _, raw := call(t, "DELETE", hook, nil); status != 204 {
		t.Fatalf("delete: %d %s", status, raw)
	}
	if status, _, _ := call(t, "GET", hook, nil); status != 404 {
		t.Errorf("GET after delete: %d", status)
	}
	if status, _, _ := call(t, "GET", hook+"/deliveries", nil); status != 404 {
		t.Errorf("deliveries after delete: %d", status)
	}
}
