package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"strings"
	"testing"

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
	"docflow/storage/postgres"
)

// TestBuiltAPIProfiles: the profile routes, the users look-ups and the
// audit log as `docflow api` mounts them, in multi-user mode.
func TestBuiltAPIProfiles(t *testing.T) {
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "correct horse battery",
	}})
	tokens := postgres.NewTokenStore(a.DB)
	token := func(owner string) string {
		plain := dfhttp.NewToken()
		if err := tokens.CreateToken(context.Background(), &docflow.APIToken{OwnerID: owner, Name: "t", TokenPrefix: plain[:12],
			TokenHash: dfhttp.HashToken(plain)}); err != nil {
			t.Fatal(err)
		}
		return plain
	}
	a.LocalUser(t, "ann@example.com", false)
	admin, ann := token("admin"), token("ann@example.com")
	do := func(method, path, tok string, body any) (int, map[string]any, string) {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := nethttp.NewRequest(method, a.URL+path, r)
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(raw, &m) //nolint:errcheck // not every body is an object
		return resp.StatusCode, m, string(raw)
	}
	if st, m, raw := do("PUT", "/api/admin/users/ann%40example.com", admin, map[string]any{"display_name": "Ann", "subscription_tier": "power"}); st != 200 || m["subscription_tier"] != "power" {
		t.Fatalf("put: %d %s", st, raw)
	}
	if st, m, raw := do("GET", "/api/admin/users?q=ann", admin, nil); st != 200 || m["total"] != float64(1) {
		t.Fatalf("list: %d %s", st, raw)
	}
	if st, m, raw := do("GET", "/api/users/search?q=ANN", ann, nil); st != 200 || !strings.Contains(raw, `"ann@example.com"`) || m["users"] == nil {
		t.Fatalf("search: %d %s", st, raw)
	}
	if st, _, raw := do("GET", "/api/users/mentionable", ann, nil); st != 200 || !strings.Contains(raw, `"display_name":"Ann"`) {
		t.Fatalf("mentionable: %d %s", st, raw)
	}
	if st, _, raw := do("GET", "/api/admin/users", ann, nil); st != 403 {
		t.Fatalf("list as ann: %d %s", st, raw)
	}
	st, m, raw := do("GET", "/api/admin/audit-log?action=profile.update", admin, nil)
	if entries, _ := m["entries"].([]any); st != 200 || len(entries) != 1 || entries[0].(map[string]any)["target"] != "user:ann@example.com" {
		t.Fatalf("audit log: %d %s", st, raw)
	}
	var events []string
	rows, err := a.DB.Pool.Query(context.Background(), `SELECT key FROM outbox WHERE key = 'user:ann@example.com' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k) //nolint:errcheck
		events = append(events, k)
	}
	rows.Close()
	if len(events) != 2 { // user.signup and user.plan_changed
		t.Fatalf("outbox: %v", events)
	}
}
