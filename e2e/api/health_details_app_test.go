package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/streams"
)

// TestHealthDetailsForAdminsOnly: with the broker gone, a signed-in user
// who is no administrator sees that the queue check failed, on the home
// page and in /api/diagnostic/health, but not what failed (the broker's
// address); an administrator sees it.
func TestHealthDetailsForAdminsOnly(t *testing.T) {
	t.Parallel()
	broker := streams.NewBroker(streams.BrokerConfig{})
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	addr := strings.Join(broker.Addrs(), ",")
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"KAFKA_BROKERS": addr,
		"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "admin-password"}})
	admin := newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}
	admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": "dave@example.com", "username": "dave", "password": "dave-password"})
	user := newClient(t, a.URL)
	if s := user.login("dave", "dave-password"); s != 200 {
		t.Fatalf("user sign-in: %d", s)
	}
	broker.Close()

	port := addr[strings.LastIndex(addr, ":")+1:]
	health := func(c *client) (string, map[string]map[string]string) {
		t.Helper()
		var out struct {
			Checks map[string]map[string]string `json:"checks"`
		}
		var body string
		deadline := time.Now().Add(time.Minute)
		for {
			_, body = c.do("GET", "/api/diagnostic/health", nil)
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatalf("health: %s", body)
			}
			if out.Checks["queue"]["status"] == "error" || time.Now().After(deadline) {
				return body, out.Checks
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	body, checks := health(user)
	if checks["queue"]["status"] != "error" || checks["database"]["status"] != "ok" {
		t.Fatalf("the user's health: %s", body)
	}
	if strings.Contains(body, port) || strings.Contains(body, "broker") || checks["queue"]["detail"] != "check failed; the details are shown to administrators" {
		t.Fatalf("a user who is no administrator sees what failed: %s", body)
	}
	_, page := user.do("GET", "/status", nil, "Accept", "text/html")
	if !strings.Contains(page, "queue") || !strings.Contains(page, "error") || strings.Contains(page, port) || strings.Contains(page, "broker") {
		t.Fatalf("the user's home page:\n%s", page)
	}

	body, checks = health(admin)
	if !strings.Contains(checks["queue"]["detail"], port) {
		t.Fatalf("the administrator's health lacks what failed: %s", body)
	}
	if _, page := admin.do("GET", "/status", nil, "Accept", "text/html"); !strings.Contains(page, port) {
		t.Fatalf("the administrator's home page lacks what failed:\n%s", page)
	}
}
