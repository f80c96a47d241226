package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// receiver is a real HTTP receiver of hook deliveries; answer gives the
// status of the n-th request (from 1).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []*nethttp.Request
	bodies [][]byte
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, req *nethttp.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs, r.bodies = append(r.reqs, req), append(r.bodies, b)
		n := len(r.reqs)
		r.mu.Unlock()
		w.WriteHeader(answer(n))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() ([]*nethttp.Request, []map[string]any, [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ms []map[string]any
	for _, b := range r.bodies {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		ms = append(ms, m)
	}
	return append([]*nethttp.Request(nil), r.reqs...), ms, append([][]byte(nil), r.bodies...)
}

func (r *receiver) count() int { reqs, _, _ := r.got(); return len(reqs) }

func ok200(int) int { return 200 }

// apiToken issues an API token of owner directly in the store.
func apiToken(t *testing.T, a *apptest.App, owner string) string {
	t.Helper()
	plain := dfhttp.NewToken()
	if err := postgres.NewTokenStore(a.DB).CreateToken(context.Background(), &docflow.APIToken{OwnerID: owner,
		Name: "automation", TokenPrefix: plain[:12], TokenHash: dfhttp.HashToken(plain)}); err != nil {
		t.Fatal(err)
	}
	return plain
}

// authed calls the API with a bearer token ("" for none).
func authed(t *testing.T, token, method, url string, body any) (int, string) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := nethttp.NewRequest(method, url, r)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// subscribe makes a hook for events at url and returns its id.
func subscribe(t *testing.T, a *apptest.App, token, url, secret string, events ...string) int64 {
	t.Helper()
	status, raw := authed(t, token, "POST", a.URL+"/api/automation/hooks/subscribe",
		map[string]any{"target_url": url, "events": events, "hook_type": "zapier", "secret": secret})
	var h map[string]any
	if status != 201 || json.Unmarshal([]byte(raw), &h) != nil || (secret != "" && (h["has_secret"] != true || strings.Contains(raw, secret))) {
		t.Fatalf("subscribe %s: %d %s", url, status, raw)
	}
	return int64(h["id"].(float64))
}

// uploadAs uploads a file with token ("" in single-user mode) and returns
// its id.
func uploadAs(t *testing.T, base, token, name string) int64 {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", name)
	io.WriteString(w, "a document "+name+"\n") //nolint:errcheck
	mw.Close()
	req, _ := nethttp.NewRequest("POST", base+"/api/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		FileID int64 `json:"file_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || json.Unmarshal(b, &out) != nil || out.FileID == 0 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	return out.FileID
}

// Automation hooks in single-user mode: every route needs a token; a hook
// subscribes with validated URL and events; documents uploaded reach it in
// the flat format, signed (Standard Webhooks and the plain HMAC), with an
// id that stays the same across a retry (500 then 200); a receiver
// answering 410 Gone is unsubscribed and receives nothing more.
func TestAutomationHooksSingleUser(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{
		"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,0.2"}})
	base := a.URL + "/api/automation"
	for _, r := range []struct{ method, path string }{{"GET", "/events"}, {"POST", "/hooks/subscribe"},
		{"GET", "/hooks"}, {"DELETE", "/hooks/1"}, {"GET", "/triggers/sample/document.processed"}} {
		if status, raw := authed(t, "", r.method, base+r.path, nil); status != 401 {
			t.Errorf("%s %s without a token: %d %s", r.method, r.path, status, raw)
		}
	}
	token := apiToken(t, a, docflow.AdminUserID(a.Settings))
	if status, raw := authed(t, token, "GET", base+"/events", nil); status != 200 || !strings.Contains(raw, `"user.signup"`) {
		t.Fatalf("events: %d %s", status, raw)
	}
	status, raw := authed(t, token, "GET", base+"/triggers/sample/document.processed", nil)
	var sample []map[string]any
	if status != 200 || json.Unmarshal([]byte(raw), &sample) != nil || len(sample) != 1 ||
		sample[0]["event"] != "document.processed" || sample[0]["document_id"] == nil || sample[0]["status"] != "completed" ||
		!strings.HasPrefix(sample[0]["id"].(string), "evt_") {
		t.Fatalf("sample: %d %s", status, raw)
	}
	if status, raw := authed(t, token, "GET", base+"/triggers/sample/file.updated", nil); status != 404 {
		t.Errorf("sample of an internal event: %d %s", status, raw)
	}

	good, flaky := newReceiver(t, ok200), newReceiver(t, func(n int) int {
		if n == 1 {
			return 500
		}
		return 200
	})
	gone := newReceiver(t, func(int) int { return 410 })
	for _, bad := range []struct {
		req  map[string]any
		want string
	}{
		{map[string]any{"target_url": good.URL, "events": []string{"file.updated"}}, "file.updated"},
		{map[string]any{"target_url": good.URL}, "events is required"},
		{map[string]any{"events": []string{"document.uploaded"}}, "target_url is required"},
		{map[string]any{"target_url": "http://10.0.0.7/hook", "events": []string{"document.uploaded"}}, "private or internal"},
		{map[string]any{"target_url": "ftp://example.com/x", "events": []string{"document.uploaded"}}, "http or https"},
	} {
		if status, raw := authed(t, token, "POST", base+"/hooks/subscribe", bad.req); status != 422 || !strings.Contains(raw, bad.want) {
			t.Errorf("subscribe %v: %d %s (want 422 naming %q)", bad.req, status, raw, bad.want)
		}
	}
	const secret = "hook-secret-bytes"
	subscribe(t, a, token, good.URL+"/in", secret, "document.uploaded")
	subscribe(t, a, token, flaky.URL, secret, "document.uploaded")
	goneID := subscribe(t, a, token, gone.URL, "", "document.uploaded")
	if status, raw := authed(t, token, "GET", base+"/hooks", nil); status != 200 || strings.Count(raw, `"target_url"`) != 3 ||
		strings.Contains(raw, secret) || !strings.Contains(raw, `"hook_type":"zapier"`) {
		t.Fatalf("list: %d %s", status, raw)
	}

	fileID := uploadAs(t, a.URL, "", "flat.txt")
	testsupport.WaitFor(t, 3*time.Minute, "the deliveries", func() bool {
		return good.count() >= 1 && flaky.count() >= 2 && gone.count() >= 1
	})
	reqs, ms, bodies := good.got()
	wh, _ := standardwebhooks.NewWebhookRaw([]byte(secret))
	if err := wh.Verify(bodies[0], reqs[0].Header); err != nil {
		t.Errorf("standard webhooks signature: %v", err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(bodies[0])
	if got := reqs[0].Header.Get("X-Webhook-Signature"); got != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
		t.Errorf("X-Webhook-Signature %q", got)
	}
	m := ms[0]
	if m["event"] != "document.uploaded" || m["document_id"] != float64(fileID) || m["filename"] != "flat.txt" ||
		m["data"] != nil || !strings.HasPrefix(fmt.Sprint(m["id"]), "evt_") || m["timestamp"] == nil {
		t.Errorf("flat body %s", bodies[0])
	}
	for _, k := range []string{"status", "title", "owner_id"} {
		if _, ok := m[k]; !ok {
			t.Errorf("flat body without %s: %s", k, bodies[0])
		}
	}
	if reqs[0].Header.Get("webhook-id") != m["id"] {
		t.Errorf("webhook-id %q, id %v", reqs[0].Header.Get("webhook-id"), m["id"])
	}
	_, fm, _ := flaky.got()
	if len(fm) != 2 || fm[0]["id"] != fm[1]["id"] || fm[0]["id"] != m["id"] {
		t.Errorf("retried delivery ids: %v", fm)
	}

	testsupport.WaitFor(t, 3*time.Minute, "the 410 hook unsubscribed", func() bool {
		_, raw := authed(t, token, "GET", base+"/hooks", nil)
		return strings.Count(raw, `"target_url"`) == 2
	})
	if status, raw := authed(t, token, "DELETE", fmt.Sprintf("%s/hooks/%d", base, goneID), nil); status != 404 {
		t.Errorf("delete of the unsubscribed hook: %d %s", status, raw)
	}
	uploadAs(t, a.URL, "", "second.txt")
	// Each receiver's copy of the second event travels apart: wait for both
	// subscribed ones.
	testsupport.WaitFor(t, 3*time.Minute, "the second document", func() bool { return good.count() == 2 && flaky.count() >= 3 })
	time.Sleep(300 * time.Millisecond) // the unsubscribed receiver's copy would have come by now
	if n := gone.count(); n != 1 {
		t.Errorf("the unsubscribed receiver got %d requests", n)
	}
	if n := flaky.count(); n != 3 {
		t.Errorf("flaky receiver got %d requests, want 3", n)
	}
}

// Automation hooks in multi-user mode: a user's hook receives the events
// of their own documents only, an administrator's those of everyone; a
// user cannot list or delete another's hook.
func TestAutomationHooksScope(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_USERNAME": "root", "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,0.2"}})
	a.LocalUser(t, "alice@example.com", false)
	a.LocalUser(t, "bob@example.com", false)
	alice, bob, admin := apiToken(t, a, "alice@example.com"), apiToken(t, a, "bob@example.com"), apiToken(t, a, "root")
	ra, rb, radmin := newReceiver(t, ok200), newReceiver(t, ok200), newReceiver(t, ok200)
	ida := subscribe(t, a, alice, ra.URL, "", "document.uploaded")
	subscribe(t, a, bob, rb.URL, "", "document.uploaded")
	subscribe(t, a, admin, radmin.URL, "", "document.uploaded")

	if status, raw := authed(t, bob, "GET", a.URL+"/api/automation/hooks", nil); status != 200 || strings.Count(raw, `"target_url"`) != 1 || !strings.Contains(raw, rb.URL) {
		t.Errorf("bob's list: %d %s", status, raw)
	}
	if status, raw := authed(t, bob, "DELETE", fmt.Sprintf("%s/api/automation/hooks/%d", a.URL, ida), nil); status != 404 {
		t.Errorf("bob deletes alice's hook: %d %s", status, raw)
	}

	fa := uploadAs(t, a.URL, alice, "alice.txt")
	fb := uploadAs(t, a.URL, bob, "bob.txt")
	testsupport.WaitFor(t, 3*time.Minute, "the deliveries", func() bool {
		return ra.count() >= 1 && rb.count() >= 1 && radmin.count() >= 2
	})
	time.Sleep(500 * time.Millisecond) // deliveries to hooks out of scope would have come by now
	docs := func(r *receiver) map[float64]string {
		_, ms, _ := r.got()
		out := map[float64]string{}
		for _, m := range ms {
			out[m["document_id"].(float64)] = fmt.Sprint(m["owner_id"])
		}
		return out
	}
	if d := docs(ra); len(d) != 1 || d[float64(fa)] != "alice@example.com" {
		t.Errorf("alice's hook got %v", d)
	}
	if d := docs(rb); len(d) != 1 || d[float64(fb)] != "bob@example.com" {
		t.Errorf("bob's hook got %v", d)
	}
	if d := docs(radmin); len(d) != 2 {
		t.Errorf("the admin's hook got %v", d)
	}
	if status, raw := authed(t, alice, "DELETE", fmt.Sprintf("%s/api/automation/hooks/%d", a.URL, ida), nil); status != 204 {
		t.Errorf("alice deletes her hook: %d %s", status, raw)
	}
}
