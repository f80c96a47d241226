package app_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// An automation hook's owner (and an administrator, nobody else) reads
// it, its delivery log with every attempt, and pauses and resumes it; a
// paused hook records no event, and its deliveries still queued are
// dropped at their attempt, which its log shows.
func TestAutomationHookDeliveryLogAndPause(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_USERNAME": "root", "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,1.5"}})
	a.LocalUser(t, "alice@example.com", false)
	a.LocalUser(t, "bob@example.com", false)
	alice, bob, admin := apiToken(t, a, "alice@example.com"), apiToken(t, a, "bob@example.com"), apiToken(t, a, "root")
	ra := newReceiver(t, func(n int) int { return map[bool]int{true: 500, false: 200}[n == 1] })
	rb := newReceiver(t, func(int) int { return 503 })
	radmin := newReceiver(t, ok200)
	ida := subscribe(t, a, alice, ra.URL, "s3cret", "document.uploaded")
	idb := subscribe(t, a, bob, rb.URL, "", "document.uploaded")
	subscribe(t, a, admin, radmin.URL, "", "document.uploaded")
	hook := func(id int64) string { return fmt.Sprintf("%s/api/automation/hooks/%d", a.URL, id) }
	decode := func(raw string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		return m
	}

	// Who sees alice's hook.
	for _, tc := range []struct {
		who, token string
		want       int
	}{{"alice", alice, 200}, {"an admin", admin, 200}, {"bob", bob, 404}, {"no token", "", 401}} {
		status, raw := authed(t, tc.token, "GET", hook(ida), nil)
		if status != tc.want || (status == 200 && (decode(raw)["has_secret"] != true || decode(raw)["is_active"] != true)) {
			t.Errorf("%s reads alice's hook: %d %s", tc.who, status, raw)
		}
		if status, raw := authed(t, tc.token, "GET", hook(ida)+"/deliveries", nil); status != tc.want {
			t.Errorf("%s reads alice's log: %d %s", tc.who, status, raw)
		}
	}
	if status, _ := authed(t, alice, "GET", hook(ida+1000), nil); status != 404 {
		t.Errorf("unknown hook: %d", status)
	}
	if status, _ := authed(t, bob, "PUT", hook(ida), map[string]any{"is_active": false}); status != 404 {
		t.Errorf("bob pauses alice's hook: %d", status)
	}
	for _, body := range []map[string]any{{"events": []string{"nope"}}, {"target_url": "http://10.0.0.1/x"},
		{"is_active": true, "active": false}, {"hook_type": string(make([]byte, 101))}} {
		if status, raw := authed(t, alice, "PUT", hook(ida), body); status != 422 {
			t.Errorf("PUT %v: %d %s", body, status, raw)
		}
	}
	if status, _ := authed(t, alice, "GET", hook(ida)+"/deliveries?per_page=0", nil); status != 422 {
		t.Errorf("per_page=0: %d", status)
	}

	// A delivery failed once then made: one log entry with both attempts.
	uploadAs(t, a.URL, alice, "first.txt")
	testsupport.WaitFor(t, 3*time.Minute, "alice's delivery retried and made", func() bool { return ra.count() >= 2 })
	var entry map[string]any
	testsupport.WaitFor(t, 3*time.Minute, "the log to show the delivery", func() bool {
		_, raw := authed(t, alice, "GET", hook(ida)+"/deliveries?page=1&per_page=10", nil)
		m := decode(raw)
		if m["total"] != 1.0 {
			return false
		}
		entry = m["deliveries"].([]any)[0].(map[string]any)
		return entry["status"] == "delivered"
	})
	attempts := entry["attempts"].([]any)
	if entry["event"] != "document.uploaded" || entry["attempt"] != 2.0 || len(attempts) != 2 ||
		attempts[0].(map[string]any)["status_code"] != 500.0 || attempts[1].(map[string]any)["status_code"] != 200.0 {
		t.Fatalf("log entry %v", entry)
	}

	// bob's receiver fails; bob pauses his hook before the retry: the
	// queued retry is dropped, and the log says so.
	uploadAs(t, a.URL, bob, "bob.txt")
	testsupport.WaitFor(t, 3*time.Minute, "bob's first attempt", func() bool { return rb.count() >= 1 })
	if status, raw := authed(t, bob, "PUT", hook(idb), map[string]any{"active": false}); status != 200 || decode(raw)["is_active"] != false {
		t.Fatalf("bob pauses: %d %s", status, raw)
	}
	testsupport.WaitFor(t, 3*time.Minute, "bob's queued retry dropped", func() bool {
		_, raw := authed(t, bob, "GET", hook(idb)+"/deliveries", nil)
		m := decode(raw)
		return m["total"] == 1.0 && m["deliveries"].([]any)[0].(map[string]any)["status"] == "dropped"
	})

	// alice pauses: her next upload is not recorded for her hook (the
	// admin's hook, subscribed to everything, shows the event went out).
	if status, raw := authed(t, alice, "PUT", hook(ida), map[string]any{"is_active": false, "description": "paused for the weekend"}); status != 200 ||
		decode(raw)["is_active"] != false || decode(raw)["description"] != "paused for the weekend" || decode(raw)["has_secret"] != true {
		t.Fatalf("alice pauses: %d %s", status, raw)
	}
	uploadAs(t, a.URL, alice, "while-paused.txt")
	testsupport.WaitFor(t, 3*time.Minute, "the admin's hook to get the upload", func() bool {
		_, ms, _ := radmin.got()
		for _, m := range ms {
			if m["filename"] == "while-paused.txt" {
				return true
			}
		}
		return false
	})
	// The event's deliveries to every subscriber are recorded together
	// (one fan-out), so the paused hook's would be in its log by now.
	// Requests are counted by file: a retry made while its first try
	// still hung on a loaded machine is a second request (at least once).
	filesGot := func(r *receiver) map[string]int {
		_, ms, _ := r.got()
		n := map[string]int{}
		for _, m := range ms {
			if f, ok := m["filename"].(string); ok {
				n[f]++
			}
		}
		return n
	}
	if _, raw := authed(t, alice, "GET", hook(ida)+"/deliveries", nil); filesGot(ra)["while-paused.txt"] != 0 || decode(raw)["total"] != 1.0 {
		t.Fatalf("paused hook: requests by file %v, log %s", filesGot(ra), raw)
	}

	// An administrator resumes it: the next event is delivered again.
	if status, raw := authed(t, admin, "PUT", hook(ida), map[string]any{"is_active": true}); status != 200 || decode(raw)["is_active"] != true {
		t.Fatalf("admin resumes: %d %s", status, raw)
	}
	uploadAs(t, a.URL, alice, "resumed.txt")
	testsupport.WaitFor(t, 3*time.Minute, "the resumed hook's delivery", func() bool { return filesGot(ra)["resumed.txt"] > 0 })
	if _, raw := authed(t, alice, "GET", hook(ida)+"/deliveries?per_page=1&page=2", nil); decode(raw)["total"] != 2.0 || decode(raw)["pages"] != 2.0 ||
		decode(raw)["deliveries"].([]any)[0].(map[string]any)["attempt"] != 2.0 {
		t.Errorf("page 2 of the log: %s", raw)
	}
}
