package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
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

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// expoRelay answers as Expo's push API does: a POST of a JSON array of
// messages, answered {data: [ticket…]} (gzip-compressed when the client
// accepts it); tokens in gone are reported DeviceNotRegistered. It
// records every message and any request that breaks the API's rules.
type expoRelay struct {
	*httptest.Server
	gone map[string]bool

	mu   sync.Mutex
	msgs []map[string]any
	bad  []string
}

func newExpoRelay(gone ...string) *expoRelay {
	r := &expoRelay{gone: map[string]bool{}}
	for _, g := range gone {
		r.gone[g] = true
	}
	r.Server = httptest.NewServer(nethttp.HandlerFunc(r.serve))
	return r
}

func (r *expoRelay) serve(w nethttp.ResponseWriter, req *nethttp.Request) {
	fail := func(why string) {
		r.mu.Lock()
		r.bad = append(r.bad, why)
		r.mu.Unlock()
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"errors":[{"code":"VALIDATION_ERROR","message":%q}]}`, why)
	}
	if req.Method != "POST" || req.URL.Path != "/--/api/v2/push/send" {
		fail("request " + req.Method + " " + req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		fail("Content-Type " + ct)
		return
	}
	if ae := req.Header.Get("Accept-Encoding"); !strings.Contains(ae, "gzip") {
		fail("Accept-Encoding " + ae + " (Expo compresses its answers)")
		return
	}
	body, _ := io.ReadAll(req.Body)
	var msgs []map[string]any
	if err := json.Unmarshal(body, &msgs); err != nil || len(msgs) == 0 || len(msgs) > 100 {
		fail(fmt.Sprintf("body is not an array of 1 to 100 messages: %s", body))
		return
	}
	var tickets []map[string]any
	for _, m := range msgs {
		to, _ := m["to"].(string)
		if r.gone[to] {
			tickets = append(tickets, map[string]any{"status": "error",
				"message": fmt.Sprintf("%q is not a registered push notification recipient", to),
				"details": map[string]any{"error": "DeviceNotRegistered"}})
		} else {
			tickets = append(tickets, map[string]any{"status": "ok", "id": "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX"})
		}
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, msgs...)
	r.mu.Unlock()
	out, _ := json.Marshal(map[string]any{"data": tickets})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if strings.Contains(req.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		gz.Write(out) //nolint:errcheck
		gz.Close()
		return
	}
	w.Write(out) //nolint:errcheck
}

// to returns the messages sent to token.
func (r *expoRelay) to(token string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, m := range r.msgs {
		if m["to"] == token {
			out = append(out, m)
		}
	}
	return out
}

type pushEnv struct {
	t      *testing.T
	a      *apptest.App
	tokens map[string]string
}

func (e *pushEnv) do(user, method, path string, body any) (int, string) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := nethttp.NewRequest(method, e.a.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.tokens[user])
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *pushEnv) register(user, token, name string) map[string]any {
	e.t.Helper()
	status, raw := e.do(user, "POST", "/api/mobile/register-device",
		map[string]any{"push_token": token, "device_name": name, "platform": "android"})
	var d map[string]any
	if status != 201 || json.Unmarshal([]byte(raw), &d) != nil {
		e.t.Fatalf("register %s for %s: %d %s", token, user, status, raw)
	}
	if strings.Contains(raw, token) {
		e.t.Errorf("register answer holds the push token: %s", raw)
	}
	return d
}

func (e *pushEnv) devices(user string) map[float64]map[string]any {
	e.t.Helper()
	status, raw := e.do(user, "GET", "/api/mobile/devices", nil)
	var list []map[string]any
	if status != 200 || json.Unmarshal([]byte(raw), &list) != nil {
		e.t.Fatalf("devices of %s: %d %s", user, status, raw)
	}
	out := map[float64]map[string]any{}
	for _, d := range list {
		out[d["id"].(float64)] = d
	}
	return out
}

func (e *pushEnv) upload(user, name string) int64 {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", name)
	io.WriteString(w, "a document to push about\n") //nolint:errcheck
	mw.Close()
	req, _ := nethttp.NewRequest("POST", e.a.URL+"/api/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.tokens[user])
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		FileID int64 `json:"file_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || json.Unmarshal(b, &out) != nil || out.FileID == 0 {
		e.t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	return out.FileID
}

// Device registration and push end to end: registration validated and
// idempotent, the list showing a preview of the token only; a processed
// document pushed once to each active device of its owner through a relay
// answering as Expo's API, with file_id; the relay's DeviceNotRegistered
// deactivating that device (no retry); another user's devices and an
// inactive one getting nothing; delete deactivating, then deleting.
func TestPushNotificationsEndToEnd(t *testing.T) {
	t.Parallel()
	const (
		good  = "ExponentPushToken[aliceGoodToken0001]"
		gone  = "ExponentPushToken[aliceGoneToken0002]"
		idle  = "ExponentPushToken[aliceIdleToken0003]"
		bobs  = "ExponentPushToken[bobsPhoneToken0004]"
		alice = "alice@example.com"
		bob   = "bob@example.com"
	)
	relay := newExpoRelay(gone)
	defer relay.Close()
	a := apptest.New(t, apptest.Options{Env: map[string]string{
		"ENABLE_TEST_STEP": "true", "AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.2,0.4",
		"PUSH_RELAY_URL": relay.URL + "/--/api/v2/push/send"}})
	e := &pushEnv{t: t, a: a, tokens: map[string]string{}}
	ctx := context.Background()
	ts := postgres.NewTokenStore(a.DB)
	for _, u := range []string{alice, bob} {
		a.LocalUser(t, u, false)
		plain := dfhttp.NewToken()
		if err := ts.CreateToken(ctx, &docflow.APIToken{OwnerID: u, Name: "phone", TokenPrefix: plain[:12],
			TokenHash: dfhttp.HashToken(plain)}); err != nil {
			t.Fatal(err)
		}
		e.tokens[u] = plain
	}
	p := &docflow.Pipeline{Name: "one test step", IsDefault: true, IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "drill", Enabled: true}}}
	if err := postgres.NewPipelineStore(a.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"device_name": "x", "platform": "ios"}, "push_token"},
		{map[string]any{"push_token": "not-a-token", "platform": "ios"}, "push_token"},
		{map[string]any{"push_token": "ExponentPushToken[]", "platform": "ios"}, "push_token"},
		{map[string]any{"push_token": "Expo PushToken[x]", "platform": "ios"}, "push_token"},
		{map[string]any{"push_token": "ExponentPushToken[" + strings.Repeat("a", 600) + "]", "platform": "ios"}, "push_token"},
		{map[string]any{"push_token": good, "platform": "windows"}, "platform"},
		{map[string]any{"push_token": good}, "platform"},
		{map[string]any{"push_token": good, "platform": "ios", "device_name": "a\x07b"}, "device_name"},
	} {
		if status, raw := e.do(alice, "POST", "/api/mobile/register-device", bad.body); status != 422 || !strings.Contains(raw, bad.field) {
			t.Errorf("register %v: %d %s (want 422 naming %s)", bad.body, status, raw, bad.field)
		}
	}
	if status, _ := e.do("", "GET", "/api/mobile/devices", nil); status != 401 {
		t.Errorf("devices without a token: %d", status)
	}

	dGood := e.register(alice, good, "Pixel")
	again := e.register(alice, good, "Pixel 8")
	if again["id"] != dGood["id"] || again["device_name"] != "Pixel 8" || again["is_active"] != true {
		t.Errorf("registering again: %v, first %v", again, dGood)
	}
	dGone := e.register(alice, gone, "old iPad")
	dIdle := e.register(alice, idle, "drawer phone")
	dBob := e.register(bob, bobs, "bob's phone")
	idleID := fmt.Sprintf("/api/mobile/devices/%v", dIdle["id"])
	if status, raw := e.do(bob, "DELETE", idleID, nil); status != 404 {
		t.Errorf("bob deletes alice's device: %d %s", status, raw)
	}
	if status, raw := e.do(alice, "DELETE", idleID, nil); status != 200 || !strings.Contains(raw, "Device deactivated") {
		t.Errorf("delete active: %d %s", status, raw)
	}
	mine := e.devices(alice)
	if len(mine) != 3 || mine[dIdle["id"].(float64)]["is_active"] != false {
		t.Errorf("alice's devices after deactivation: %v", mine)
	}
	for _, d := range mine {
		for _, k := range []string{"id", "platform", "device_name", "is_active", "created_at", "push_token_preview"} {
			if _, ok := d[k]; !ok {
				t.Errorf("device %v lacks %s", d, k)
			}
		}
		if _, ok := d["push_token"]; ok {
			t.Errorf("device %v shows its push token", d)
		}
	}
	if b := e.devices(bob); len(b) != 1 || b[dBob["id"].(float64)] == nil {
		t.Errorf("bob's devices: %v", b)
	}

	fileID := e.upload(alice, "quarterly-report.txt")
	testsupport.WaitFor(t, 3*time.Minute, "the push to alice's phone", func() bool { return len(relay.to(good)) > 0 })
	testsupport.WaitFor(t, 3*time.Minute, "the unregistered device deactivated", func() bool {
		return e.devices(alice)[dGone["id"].(float64)]["is_active"] == false
	})
	time.Sleep(1500 * time.Millisecond) // retries (0.2, 0.4 s) would have come by now
	m := relay.to(good)
	if len(m) != 1 {
		t.Fatalf("alice's phone got %d pushes: %v", len(m), m)
	}
	data, _ := m[0]["data"].(map[string]any)
	if data["file_id"] != float64(fileID) || m[0]["title"] == "" || !strings.Contains(m[0]["body"].(string), "quarterly-report.txt") {
		t.Errorf("push %v", m[0])
	}
	if n := len(relay.to(gone)); n != 1 {
		t.Errorf("the unregistered device was pushed %d times, want 1 (no retry)", n)
	}
	if n, n2 := len(relay.to(bobs)), len(relay.to(idle)); n != 0 || n2 != 0 {
		t.Errorf("bob's phone got %d pushes, the inactive device %d", n, n2)
	}
	relay.mu.Lock()
	if len(relay.bad) > 0 {
		t.Errorf("requests the relay refused: %v", relay.bad)
	}
	relay.mu.Unlock()

	// Registering the unregistered token again (the app reinstalled)
	// reactivates the device.
	if d := e.register(alice, gone, "old iPad"); d["id"] != dGone["id"] || d["is_active"] != true {
		t.Errorf("re-registered %v", d)
	}
	if status, raw := e.do(alice, "DELETE", idleID, nil); status != 200 || !strings.Contains(raw, "Device deleted") {
		t.Errorf("delete inactive: %d %s", status, raw)
	}
	if status, raw := e.do(alice, "DELETE", idleID, nil); status != 404 {
		t.Errorf("delete deleted: %d %s", status, raw)
	}
	// A token registered by another user moves to that user.
	e.register(bob, good, "Pixel (bob)")
	if _, still := e.devices(alice)[dGood["id"].(float64)]; still {
		t.Errorf("alice still holds a token bob registered since")
	}
}
