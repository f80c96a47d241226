package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// An integration failing for longer than INTEGRATION_FAILING_NOTIFY_AFTER
// notifies the admin channels once, whatever errors follow while it keeps
// failing; once it recovered, its next failure notifies again. (Claims
// by several processes at once: TestClaimFailingIntegrations.)
func TestIntegrationFailingNotifiesOnce(t *testing.T) {
	// Serial: it is timed against the alert threshold (not notified before
	// 1 s, once per run of failures); other tests on the CPU would blur it.
	rc := newReceiver(t, func(int) int { return 200 })
	received := func() []map[string]any { _, ms, _ := rc.got(); return ms }
	env := map[string]string{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,0.2",
		"INTEGRATION_FAILING_NOTIFY_AFTER": "1s",
		"NOTIFICATION_URLS":                "json://" + strings.TrimPrefix(rc.URL, "http://") + "/admin"}
	a := apptest.New(t, apptest.Options{Env: env})
	status, body, raw := call(t, "POST", a.URL+"/api/integrations/", map[string]any{"integration_type": "local",
		"direction": "destination", "name": "archive", "config": map[string]any{"path": "archive"}})
	if status != 201 {
		t.Fatalf("create integration: %d %s", status, raw)
	}
	id := int64(body["id"].(float64))
	cipher, err := postgres.NewCipher(strings.Repeat("t", 40))
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.NewIntegrationStore(a.DB, cipher)
	ctx := context.Background()
	fail := func(msg string) {
		t.Helper()
		if err := store.SetIntegrationError(ctx, id, msg); err != nil {
			t.Fatal(err)
		}
	}

	fail("write archive/x.pdf: permission denied")
	start := time.Now()
	testsupport.WaitFor(t, 3*time.Minute, "the admins notified of the failing integration", func() bool { return len(received()) >= 1 })
	if took := time.Since(start); took < time.Second {
		t.Errorf("notified after %v, before the threshold", took)
	}
	m := received()[0]
	if !strings.Contains(fmt.Sprint(m["title"]), "integration failing: archive") ||
		!strings.Contains(fmt.Sprint(m["message"]), "permission denied") || !strings.Contains(fmt.Sprint(m["message"]), fmt.Sprintf("id %d,", id)) {
		t.Errorf("notification %v", m)
	}
	// Still failing, with other errors, for several thresholds: no more.
	for i := range 3 {
		fail(fmt.Sprintf("write archive/y.pdf: disk full (%d)", i))
		time.Sleep(800 * time.Millisecond)
	}
	if r := received(); len(r) != 1 {
		t.Fatalf("%d notifications for one failure: %v", len(r), r)
	}

	// Recovered, then failing again: one more.
	fail("")
	time.Sleep(500 * time.Millisecond)
	fail("connect: connection refused")
	testsupport.WaitFor(t, 3*time.Minute, "the second failure notified", func() bool { return len(received()) >= 2 })
	time.Sleep(1500 * time.Millisecond)
	r := received()
	if len(r) != 2 || !strings.Contains(fmt.Sprint(r[1]["message"]), "connection refused") {
		t.Fatalf("notifications: %v", r)
	}
}
