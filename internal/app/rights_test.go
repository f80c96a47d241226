package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// A hook made by an administrator gets every user's events only while
// its owner is an administrator: once the owner is demoted, it gets the
// owner's own events only, at the next event; the local admin account's
// hook (ADMIN_USERNAME) keeps seeing all. Delivered for real to local
// receivers.
func TestHookSeesAllOnlyWhileItsOwnerIsAnAdmin(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_USERNAME": "root", "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "WEBHOOK_RETRY_DELAYS": "0.1,0.2"}})
	boss := a.LocalUser(t, "boss@example.com", true)
	a.LocalUser(t, "alice@example.com", false)
	bossTok, alice, root := a.Token(t, "boss@example.com"), a.Token(t, "alice@example.com"), a.Token(t, "root")
	rboss, rroot := newReceiver(t, ok200), newReceiver(t, ok200)
	hookID := subscribe(t, a, bossTok, rboss.URL, "", "document.uploaded")
	subscribe(t, a, root, rroot.URL, "", "document.uploaded")
	got := func(r *receiver) map[float64]bool {
		_, ms, _ := r.got()
		out := map[float64]bool{}
		for _, m := range ms {
			out[m["document_id"].(float64)] = true
		}
		return out
	}

	before := uploadAs(t, a.URL, alice, "before.txt")
	testsupport.WaitFor(t, 3*time.Minute, "alice's document at the admin's hook", func() bool { return got(rboss)[float64(before)] })

	if status, raw := authed(t, root, "PATCH", fmt.Sprintf("%s/api/admin/users/local/%d", a.URL, boss.ID),
		map[string]any{"is_admin": false}); status != 200 {
		t.Fatalf("demote: %d %s", status, raw)
	}
	after := uploadAs(t, a.URL, alice, "after.txt")
	own := uploadAs(t, a.URL, bossTok, "own.txt")
	testsupport.WaitFor(t, 3*time.Minute, "the demoted owner's own document and alice's at the root hook", func() bool {
		return got(rboss)[float64(own)] && got(rroot)[float64(after)]
	})
	time.Sleep(time.Second) // a copy to the demoted owner's hook would have come by now
	if got(rboss)[float64(after)] {
		t.Errorf("the demoted owner's hook got alice's document after the demotion: %v", got(rboss))
	}

	// The hook's life is in the audit log.
	hook := fmt.Sprintf("%s/api/automation/hooks/%d", a.URL, hookID)
	if status, raw := authed(t, bossTok, "PUT", hook, map[string]any{"is_active": false}); status != 200 {
		t.Fatalf("pause: %d %s", status, raw)
	}
	if status, raw := authed(t, bossTok, "DELETE", hook, nil); status != 204 {
		t.Fatalf("delete: %d %s", status, raw)
	}
	target := fmt.Sprintf("hook:%d", hookID)
	for action, detail := range map[string]string{"automation_hook.subscribe": rboss.URL + " sees_all=true",
		"automation_hook.update": "paused", "automation_hook.unsubscribe": ""} {
		status, raw := authed(t, root, "GET", a.URL+"/api/admin/audit-log?action="+action, nil)
		var log struct {
			Entries []struct{ Actor, Target, Detail string }
		}
		if status != 200 || json.Unmarshal([]byte(raw), &log) != nil {
			t.Fatalf("audit %s: %d %s", action, status, raw)
		}
		n := 0
		for _, e := range log.Entries {
			if e.Target == target {
				n++
				if e.Actor != "boss@example.com" || e.Detail != detail {
					t.Errorf("audit %s: %+v", action, e)
				}
			}
		}
		if n != 1 {
			t.Errorf("audit %s of %s: %d entries: %s", action, target, n, raw)
		}
	}
}

// With authentication on, an ADMIN_PASSWORD shorter than 12 characters
// refuses the start with a message naming it; empty (no local admin
// sign-in) or without authentication it starts. The settings API refuses
// a change that would break the rule.
func TestAdminPasswordLength(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := apptest.Start(ctx, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "eleven-char"}})
	if err == nil {
		a.Close()
		t.Fatal("started with an 11-character ADMIN_PASSWORD")
	}
	if msg := err.Error(); !strings.Contains(msg, "ADMIN_PASSWORD") || !strings.Contains(msg, "at least 12 characters") || strings.Contains(msg, "eleven-char") {
		t.Errorf("refusal: %v", err)
	}

	a = apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "false", "ADMIN_PASSWORD": "short"}})
	if _, err := a.Settings.Set(ctx, "AUTH_ENABLED", "true"); docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "ADMIN_PASSWORD") {
		t.Errorf("turning authentication on with a short ADMIN_PASSWORD: %v", err)
	}
	if _, err := a.Settings.Set(ctx, "ADMIN_PASSWORD", "twelve chars"); err != nil {
		t.Fatalf("a 12-character ADMIN_PASSWORD: %v", err)
	}
	if _, err := a.Settings.Set(ctx, "AUTH_ENABLED", "true"); err != nil {
		t.Fatalf("turning authentication on: %v", err)
	}
	if err := a.Settings.Delete(ctx, "ADMIN_PASSWORD"); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Errorf("falling back to the short ADMIN_PASSWORD of the environment: %v", err)
	}
	if _, err := a.Settings.Set(ctx, "ADMIN_PASSWORD", "x"); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Errorf("a 1-character ADMIN_PASSWORD with authentication on: %v", err)
	}

	apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": ""}})
}
