package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
	"docflow/storage/postgres"
)

// browser signs in to base as user and returns a client with its session.
func browser(t *testing.T, base, user, password string) *nethttp.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &nethttp.Client{Jar: jar}
	b, _ := json.Marshal(map[string]string{"username": user, "password": password})
	resp, err := c.Post(base+"/login", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("sign-in of %s: %d", user, resp.StatusCode)
	}
	return c
}

// homePage returns / as c sees it, unescaped.
func homePage(t *testing.T, c *nethttp.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /: %d %s", resp.StatusCode, b)
	}
	return html.UnescapeString(string(b))
}

// What single-user mode made (a token, an automation hook that sees every
// user's events, a webhook, a local administrator) is listed at the first
// start with authentication on: to administrators on /, not to users; an
// api process starting soon after shows it too.
func TestSingleUserLeftoversNotice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	recv := newReceiver(t, ok200)
	single := apptest.New(t, apptest.Options{Role: "api", DB: db, Env: map[string]string{"AUTH_ENABLED": "false",
		"ADMIN_USERNAME": "root", "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}})
	status, raw := authed(t, "", "POST", single.URL+"/api/api-tokens/", map[string]any{"name": "made anonymously"})
	var tok struct{ Token string }
	if status != 201 || json.Unmarshal([]byte(raw), &tok) != nil {
		t.Fatalf("token: %d %s", status, raw)
	}
	if status, raw := authed(t, "", "POST", single.URL+"/api/admin/users/local", map[string]any{"email": "lee@example.com",
		"username": "lee", "password": "lee-password", "is_admin": true}); status != 201 {
		t.Fatalf("local admin: %d %s", status, raw)
	}
	if status, raw := authed(t, "", "POST", single.URL+"/api/webhooks/", map[string]any{"url": recv.URL + "/webhook",
		"events": []string{"document.uploaded"}}); status != 201 {
		t.Fatalf("webhook: %d %s", status, raw)
	}
	subscribe(t, single, tok.Token, recv.URL+"/hook", "", "document.uploaded")
	single.Close()

	env := map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root", "ADMIN_PASSWORD": "root-password"}
	for _, when := range []string{"first start with authentication", "a start soon after"} {
		a := apptest.New(t, apptest.Options{Role: "api", DB: db, Env: env})
		page := homePage(t, browser(t, a.URL, "root", "root-password"), a.URL)
		for _, want := range []string{"made while it was off", `"made anonymously"`, "owner root", "lee@example.com",
			recv.URL + "/webhook", recv.URL + "/hook, owner root, every user's events"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the admin's / lacks %q", when, want)
			}
		}
		if when == "first start with authentication" {
			if status, raw := authed(t, "", "POST", a.URL+"/api/admin/users/local", nil); status != 401 {
				t.Fatalf("anonymous admin route: %d %s", status, raw)
			}
			a.LocalUser(t, "una@example.com", false)
		}
		if page := homePage(t, browser(t, a.URL, "una@example.com", apptest.Password("una@example.com")), a.URL); strings.Contains(page, "made while it was off") {
			t.Errorf("%s: a user's / shows the notice", when)
		}
		a.Close()
	}
}
