package api_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// twoAPIs starts two api processes on one database (and one broker), with
// rate limiting on and env's settings.
func twoAPIs(t *testing.T, env map[string]string) (a, b *apptest.App) {
	t.Helper()
	envA := map[string]string{"AUTH_ENABLED": "true", "RATE_LIMITING_ENABLED": "true"}
	for k, v := range env {
		envA[k] = v
	}
	a = apptest.New(t, apptest.Options{Role: "api", Env: envA})
	envB := map[string]string{"KAFKA_BROKERS": strings.Join(a.Brokers, ",")}
	for k, v := range envA {
		envB[k] = v
	}
	b = apptest.New(t, apptest.Options{Role: "api", DB: a.DB, Env: envB})
	return a, b
}

// call sends method path with token to base and returns the status, the
// Retry-After header and the body.
func call(t *testing.T, method, url, token string, body io.Reader, contentType string) (int, string, string) {
	t.Helper()
	req, err := nethttp.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// TestAPIRateLimitAcrossProcesses: two api processes together admit a
// user RATE_LIMIT_DEFAULT's requests, not twice as many: alternating
// requests, then a concurrent burst of another user's through both. The
// refusal is the usual 429 with Retry-After. (Leases of one permit at a
// limit of 10: the documented bound lets one fewer through, never more.)
func TestAPIRateLimitAcrossProcesses(t *testing.T) {
	t.Parallel()
	a, b := twoAPIs(t, map[string]string{"RATE_LIMIT_DEFAULT": "10/day"})
	a.LocalUser(t, "alice@example.com", false)
	a.LocalUser(t, "bob@example.com", false)
	alice := a.Token(t, "alice@example.com")
	bob := a.Token(t, "bob@example.com")

	admitted := 0
	var last429 [2]string
	for i := range 30 {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		s, retry, body := call(t, "GET", base+"/api/api-tokens/", alice, nil, "")
		switch s {
		case 200:
			admitted++
		case 429:
			last429 = [2]string{retry, body}
		default:
			t.Fatalf("request %d: %d %s", i, s, body)
		}
	}
	if admitted > 10 || admitted < 9 {
		t.Fatalf("two processes admitted %d of alice's 30 requests under 10/day, want 10 (at least 9)", admitted)
	}
	if last429[0] == "" || !strings.Contains(last429[1], "Rate limit exceeded: 10 per day") {
		t.Fatalf("429 with Retry-After %q and %s", last429[0], last429[1])
	}

	statuses := acrossTwo(40, a.URL, b.URL, func(base string) int {
		s, _, _ := call(t, "GET", base+"/api/api-tokens/", bob, nil, "")
		return s
	})
	if statuses[200] > 10 || statuses[200] < 9 || statuses[200]+statuses[429] != 40 {
		t.Fatalf("a burst of 40 through both processes under 10/day: %v, want 10 (at least 9) admitted, the rest 429", statuses)
	}
}

// TestUploadWindowAcrossProcesses: the per-user upload window holds across
// two api processes (UPLOAD_RATE_LIMIT_PER_USER uploads per
// UPLOAD_RATE_LIMIT_WINDOW, with its 429 and Retry-After of half the
// window), and admits again once the window has moved on.
func TestUploadWindowAcrossProcesses(t *testing.T) {
	t.Parallel()
	env := map[string]string{"UPLOAD_RATE_LIMIT_PER_USER": "3", "UPLOAD_RATE_LIMIT_WINDOW": "60",
		"RATE_LIMIT_UPLOAD": "1000/minute", "RATE_LIMIT_DEFAULT": "1000/minute"}
	a, b := twoAPIs(t, env)
	a.LocalUser(t, "carol@example.com", false)
	carol := a.Token(t, "carol@example.com")
	n := 0
	upload := func(base string) (int, string, string) {
		n++
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("file", "w.pdf")
		fmt.Fprintf(w, "%%PDF-1.4\n%% window %d\n%%%%EOF\n", n)
		mw.Close()
		return call(t, "POST", base+"/api/ui-upload", carol, &buf, mw.FormDataContentType())
	}

	var statuses []int
	var retry, detail string
	for i := range 6 {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		s, r, body := upload(base)
		statuses = append(statuses, s)
		if s == 429 && retry == "" {
			retry, detail = r, body
		}
	}
	if fmt.Sprint(statuses) != "[200 200 200 429 429 429]" {
		t.Fatalf("uploads alternating between two processes under 3 per 60 s: %v, want 3 admitted", statuses)
	}
	if retry != "30" || !strings.Contains(detail, "Rate limit exceeded: 3 per 60 seconds") {
		t.Fatalf("429 with Retry-After %q (want half the window, 30) and %s", retry, detail)
	}

	// A window of one second: full at once, then free again.
	for _, p := range []*apptest.App{a, b} {
		p.SetEnv("UPLOAD_RATE_LIMIT_WINDOW", "1")
	}
	refused := false
	for i := 0; i < 12 && !refused; i++ {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		s, _, body := upload(base)
		switch s {
		case 200:
		case 429:
			refused = true
		default:
			t.Fatalf("upload: %d %s", s, body)
		}
	}
	if !refused {
		t.Fatal("12 uploads at once under 3 per second, none refused")
	}
	testsupport.WaitFor(t, 3*time.Minute, "the upload window to slide on", func() bool {
		s, _, _ := upload(b.URL)
		return s == 200
	})
}

// acrossTwo sends n requests at once, alternating between the processes
// at baseA and baseB, and counts the statuses do returns.
func acrossTwo(n int, baseA, baseB string, do func(base string) int) map[int]int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	statuses := map[int]int{}
	for i := range n {
		base := baseA
		if i%2 == 1 {
			base = baseB
		}
		wg.Go(func() {
			s := do(base)
			mu.Lock()
			statuses[s]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return statuses
}
