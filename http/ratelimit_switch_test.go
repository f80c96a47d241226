package http

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"docflow"
	"docflow/intake"
)

// busy makes intake see a deep queue: the per-user window shrinks to a
// quarter of UPLOAD_RATE_LIMIT_PER_USER.
func busy(c *intake.Config) {
	c.QueueDepth = func(context.Context) (int, error) { return 150, nil }
}

// TestRateLimitingOffSwitchesOffUploadWindow: RATE_LIMITING_ENABLED=false
// turns off the per-user upload window (ui-upload and process-url) however
// busy the machine is; the profile's daily limit is not a rate limit and
// stays.
func TestRateLimitingOffSwitchesOffUploadWindow(t *testing.T) {
	t.Parallel()
	var hits int64
	var mu sync.Mutex
	srv := fetchServer(t, &hits, &mu)
	local := fmt.Sprintf("http://localhost:%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "RATE_LIMITING_ENABLED": "false",
		"UPLOAD_RATE_LIMIT_PER_USER": "8", "RATE_LIMIT_UPLOAD": "2/minute", "URL_FETCH_ALLOWED_HOSTS": "localhost"}, busy)
	alice := fe.token("alice")
	for i := 0; i < 6; i++ {
		if resp, m := fe.upload("/api/ui-upload", alice, "a.pdf", pdf("off"+strconv.Itoa(i))); resp.StatusCode != 200 {
			t.Fatalf("ui-upload %d with rate limiting off: %d %v", i, resp.StatusCode, m)
		}
	}
	for i := 0; i < 3; i++ {
		resp, raw := fe.do("POST", "/api/process-url", alice, map[string]any{"url": local + "/doc.pdf"})
		if resp.StatusCode != 200 && resp.StatusCode != 409 && !strings.Contains(string(raw), "uplicate") {
			t.Fatalf("process-url %d with rate limiting off: %d %s", i, resp.StatusCode, raw)
		}
	}
	// The daily limit stays.
	if _, err := fe.DB.Pool.Exec(context.Background(), `INSERT INTO user_profiles (user_id, daily_upload_limit) VALUES ('bob', 1)`); err != nil {
		t.Fatal(err)
	}
	bob := fe.token("bob")
	if resp, m := fe.upload("/api/ui-upload", bob, "b.pdf", pdf("bob1")); resp.StatusCode != 200 {
		t.Fatalf("bob first %d %v", resp.StatusCode, m)
	}
	if resp, m := fe.upload("/api/ui-upload", bob, "b.pdf", pdf("bob2")); resp.StatusCode != 429 || m["detail"] != "Daily upload limit of 1 reached" {
		t.Fatalf("daily limit with rate limiting off: %d %v", resp.StatusCode, m)
	}

	// Switched on, the same busy machine cuts alice to 8 × 0.25 = 2.
	fe.SetEnv("RATE_LIMITING_ENABLED", "true")
	fe.SetEnv("RATE_LIMIT_UPLOAD", "600/minute")
	carol := fe.token("carol")
	for i := 0; i < 2; i++ {
		if resp, m := fe.upload("/api/ui-upload", carol, "c.pdf", pdf("on"+strconv.Itoa(i))); resp.StatusCode != 200 {
			t.Fatalf("ui-upload %d: %d %v", i, resp.StatusCode, m)
		}
	}
	if resp, m := fe.upload("/api/ui-upload", carol, "c.pdf", pdf("on2")); resp.StatusCode != 429 ||
		!strings.HasPrefix(m["detail"].(string), "Rate limit exceeded: 2 per 60 seconds") {
		t.Fatalf("window on: %d %v", resp.StatusCode, m)
	}
}

// TestSingleUserUploadBatchIsNotRefused: under AUTH_ENABLED=false the
// anonymous single user is limited by RATE_LIMIT_UPLOAD, not by the
// per-user window: a batch of 100 files dropped on the upload page on a
// busy machine goes through.
func TestSingleUserUploadBatchIsNotRefused(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"RATE_LIMITING_ENABLED": "true", "UPLOAD_RATE_LIMIT_PER_USER": "20"}, busy)
	for i := 0; i < 100; i++ {
		if resp, m := fe.upload("/api/ui-upload", "", "batch.pdf", pdf("batch"+strconv.Itoa(i))); resp.StatusCode != 200 {
			t.Fatalf("upload %d of the batch: %d %v", i, resp.StatusCode, m)
		}
	}
	// RATE_LIMIT_UPLOAD is the single user's limit, at the HTTP layer and
	// in intake itself (which other front ends share).
	fe.SetEnv("RATE_LIMIT_UPLOAD", "100/minute")
	resp, m := fe.upload("/api/ui-upload", "", "more.pdf", pdf("more"))
	if resp.StatusCode != 429 || m["detail"] != "Rate limit exceeded: 100 per minute" {
		t.Fatalf("101st upload under 100/minute: %d %v", resp.StatusCode, m)
	}
	anon := &docflow.User{IsAdmin: true, Anonymous: true}
	if err := fe.Intake.Admit(context.Background(), anon, docflow.ChannelUIUpload); docflow.ErrorCode(err) != docflow.ERATELIMIT ||
		!strings.Contains(err.Error(), "100 per minute") {
		t.Fatalf("intake's own limit for the single user: %v", err)
	}
}
