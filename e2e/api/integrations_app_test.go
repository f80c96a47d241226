package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
)

// TestBuiltAPIIntegrations: on the API as `docflow api` builds it, in
// single-user mode, the README's one-call mailbox is created without quota,
// its credentials never come back, and the LOCAL tester registered by
// internal/app answers.
func TestBuiltAPIIntegrations(t *testing.T) {
	dest := t.TempDir()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"LOCAL_DESTINATION_DIR": dest}})
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := nethttp.Post(a.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), "app-password") {
			t.Fatalf("%s leaks credentials: %s", path, b)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	mailbox := `{"integration_type": "IMAP", "name": "invoices mailbox",
		"config": {"host": "imap.example.com", "port": 993, "security": "tls", "folder": "INBOX", "poll_interval": 60, "move_to_folder": "Processed"},
		"credentials": {"username": "invoices@example.com", "password": "app-password"}}`
	for i := 0; i < 2; i++ { // free tier would allow none: single-user mode has no quota
		if status, m := post("/api/integrations/", mailbox); status != 201 || m["has_credentials"] != true || m["direction"] != "SOURCE" {
			t.Fatalf("create: %d %v", status, m)
		}
	}
	if status, body := get(t, a.URL+"/api/integrations/?direction=SOURCE"); status != 200 || strings.Contains(body, "app-password") || strings.Count(body, `"IMAP"`) != 2 {
		t.Fatalf("list: %d %s", status, body)
	}
	if status, body := get(t, a.URL+"/api/integrations/quota/"); status != 200 || !strings.Contains(body, `"sources":{"current_count":2,"max_allowed":null,"can_add":true}`) {
		t.Fatalf("quota: %d %s", status, body)
	}
	if status, m := post("/api/integrations/test", `{"integration_type": "local", "config": {"path": "invoices"}}`); status != 200 || m["success"] != true {
		t.Fatalf("local test: %d %v", status, m)
	}
	if _, err := os.Stat(filepath.Join(dest, "admin", "invoices")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "admin", "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if status, m := post("/api/integrations/test", `{"integration_type": "LOCAL", "config": {"path": "file/sub"}}`); status != 200 || m["success"] != false {
		t.Fatalf("local failing test: %d %v", status, m)
	}
	if status, m := post("/api/integrations/test", `{"integration_id": 1}`); status != 200 || m["success"] != false || m["message"] == "" {
		t.Fatalf("imap test: %d %v", status, m)
	}
}
