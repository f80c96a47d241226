package app_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// Admin notifications end to end: a payment issue reported through the
// API reaches the admin channel through the delivery core (the channel
// fails once, the retry delivers it, once); test-notification reports the
// invalid entry next to the channel that works.
func TestAdminNotificationsEndToEnd(t *testing.T) {
	t.Parallel()
	// The channel fails its first request.
	rc := newReceiver(t, func(n int) int {
		if n == 1 {
			return 500
		}
		return 200
	})
	received := func() []map[string]any { _, ms, _ := rc.got(); return ms }
	channel := "json://" + strings.TrimPrefix(rc.URL, "http://") + "/admin"
	a := apptest.New(t, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,0.2",
		"NOTIFICATION_URLS": channel + ", pushover://secrettoken@example.com"}}).URL

	id := "pat@example.com"
	if status, _, raw := call(t, "PUT", a+"/api/admin/users/"+url.PathEscape(id), map[string]any{"display_name": "Pat"}); status != 200 {
		t.Fatalf("profile: %d %s", status, raw)
	}
	if status, _, raw := call(t, "POST", a+"/api/admin/users/"+url.PathEscape(id)+"/payment-issue", map[string]any{"issue": "card expired"}); status != 200 {
		t.Fatalf("payment issue: %d %s", status, raw)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the payment issue notified (after one failed attempt)", func() bool { return len(received()) >= 2 })
	time.Sleep(time.Second) // no further attempt once delivered
	r := received()
	if len(r) != 2 {
		t.Fatalf("%d requests: %v", len(r), r)
	}
	for _, m := range r {
		if !strings.Contains(m["title"].(string), "payment issue for user "+id) || !strings.Contains(m["message"].(string), "card expired") {
			t.Errorf("notification %v", m)
		}
	}

	status, body, raw := call(t, "POST", a+"/api/diagnostic/test-notification", nil)
	if status != 200 || body["status"] != "partial" || body["services_count"] != 2.0 || strings.Contains(raw, "secrettoken") {
		t.Fatalf("test-notification: %d %s", status, raw)
	}
	results := body["results"].([]any)
	ok, bad := results[0].(map[string]any), results[1].(map[string]any)
	if ok["ok"] != true || bad["ok"] != false || !strings.Contains(bad["detail"].(string), "unsupported scheme") {
		t.Errorf("results: %s", raw)
	}
	if r := received(); len(r) != 3 || r[2]["title"] != "docflow test notification" {
		t.Errorf("test notification not received: %v", r)
	}
}

// document.failed reaches the admin channel only while
// NOTIFY_ON_DOCUMENT_FAILED is on.
func TestAdminNotifiedOfFailedDocuments(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int) int { return 200 })
	seen := func() []string {
		_, ms, _ := rc.got()
		titles := make([]string, len(ms))
		for i, m := range ms {
			titles[i] = fmt.Sprint(m["title"])
		}
		return titles
	}
	a := apptest.New(t, apptest.Options{Env: map[string]string{"ENABLE_TEST_STEP": "true", "STEP_RETRY_DELAYS": "0.1s",
		"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "NOTIFY_ON_DOCUMENT_FAILED": "true",
		"NOTIFICATION_URLS": "json://" + strings.TrimPrefix(rc.URL, "http://") + "/admin"}})
	ctx := context.Background()
	p := &docflow.Pipeline{Name: "failing", IsDefault: true, IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "drill", Enabled: true,
			Config: map[string]any{"mode": "fail"}}}}
	if err := postgres.NewPipelineStore(a.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	failed := func(id int64) func() bool {
		return func() bool {
			f, err := a.Files.FindFileByID(ctx, id)
			return err == nil && f.Status == docflow.StatusFailed
		}
	}
	id := upload(t, a.URL, "broken.txt", "a document\n")
	testsupport.WaitFor(t, 3*time.Minute, "broken.txt failed", failed(id))
	testsupport.WaitFor(t, 3*time.Minute, "the admins notified", func() bool { return len(seen()) >= 1 })
	if s := seen(); len(s) != 1 || !strings.Contains(s[0], "document failed: broken.txt") {
		t.Fatalf("notifications: %q", s)
	}

	a.SetEnv("NOTIFY_ON_DOCUMENT_FAILED", "false")
	id = upload(t, a.URL, "quiet.txt", "another document\n")
	testsupport.WaitFor(t, 3*time.Minute, "quiet.txt failed", failed(id))
	time.Sleep(2 * time.Second) // its notification would have come by now
	if s := seen(); len(s) != 1 {
		t.Fatalf("notified with the setting off: %q", s)
	}
}
