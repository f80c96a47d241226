package http

import (
	"context"
	"strings"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

func mountWebhooks(e *testEnv) {
	c, err := postgres.NewCipher(strings.Repeat("s", 40))
	if err != nil {
		e.t.Fatal(err)
	}
	store := postgres.NewWebhookStore(e.DB, c, func(id int64, attempt int) (docflow.OutboxMessage, error) {
		return docflow.OutboxMessage{Topic: "docflow.deliveries", Payload: []byte(`{}`)}, nil
	})
	e.Server.MountWebhooks(WebhooksDeps{Webhooks: store})
}

// Webhooks are the administrators': others get 403, anonymous callers
// 401. The secret goes in and never out; events and URLs are checked on
// create and update alike.
func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, mountWebhooks)
	admin, user := e.token("admin"), e.token("bob")

	resp, body := e.do("GET", "/api/webhooks/", "", nil)
	e.expect(resp, body, 401)
	resp, body = e.do("GET", "/api/webhooks/", user, nil)
	e.expect(resp, body, 403)
	resp, body = e.do("POST", "/api/webhooks/", user, map[string]any{"url": "https://example.com/h", "events": []string{"document.uploaded"}})
	e.expect(resp, body, 403)

	resp, body = e.do("GET", "/api/webhooks/events", admin, nil)
	e.expect(resp, body, 200)
	if strings.TrimSpace(string(body)) != `["document.uploaded","document.processed","document.failed","document.updated","user.signup","user.plan_changed","user.payment_issue"]` {
		t.Errorf("events %s", body)
	}

	resp, body = e.do("POST", "/api/webhooks", admin, map[string]any{"url": "https://93.184.215.14/h", "secret": "topsecret",
		"events": []string{"user.signup", "document.failed", "user.signup"}, "is_active": false})
	e.expect(resp, body, 201)
	w := e.json(body)
	if w["has_secret"] != true || w["is_active"] != false || strings.Contains(string(body), "topsecret") {
		t.Fatalf("created %s", body)
	}
	if ev := w["events"].([]any); len(ev) != 2 || ev[0] != "document.failed" || ev[1] != "user.signup" {
		t.Errorf("events stored as %v", ev)
	}
	var sealed string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT secret FROM webhooks`).Scan(&sealed); err != nil || sealed == "" || strings.Contains(sealed, "topsecret") {
		t.Errorf("secret at rest %q (%v)", sealed, err)
	}
	path := "/api/webhooks/" + itoa(int64(w["id"].(float64)))

	for _, bad := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"events": []string{"document.deleted"}}, `document.deleted`},
		{map[string]any{"events": []string{}}, "at least one"},
		{map[string]any{"url": "http://169.254.169.254/latest"}, "access to private or internal addresses is not allowed"},
		{map[string]any{"url": "http://192.168.1.10/h"}, "access to private or internal addresses is not allowed"},
		{map[string]any{"url": "javascript:alert(1)"}, "http or https"},
		{map[string]any{"url": "https://user:pw@example.com/"}, "credentials"},
	} {
		resp, body := e.do("PUT", path, admin, bad.body)
		if resp.StatusCode != 422 || !strings.Contains(string(body), bad.want) {
			t.Errorf("PUT %v: %d %s, want 422 with %q", bad.body, resp.StatusCode, body, bad.want)
		}
	}
	resp, body = e.do("PUT", path, admin, map[string]any{"secret": "", "is_active": true})
	e.expect(resp, body, 200)
	if w := e.json(body); w["has_secret"] != false || w["is_active"] != true || w["url"] != "https://93.184.215.14/h" {
		t.Errorf("updated %s", body)
	}

	// WEBHOOK_ALLOWED_HOSTS lets an intranet receiver through.
	e.SetEnv("WEBHOOK_ALLOWED_HOSTS", "192.168.1.10")
	resp, body = e.do("PUT", path, admin, map[string]any{"url": "http://192.168.1.10/h"})
	e.expect(resp, body, 200)

	resp, body = e.do("GET", path+"/deliveries?per_page=0", admin, nil)
	e.expect(resp, body, 422)
	resp, body = e.do("GET", path+"/deliveries", admin, nil)
	e.expect(resp, body, 200)
	if d := e.json(body); d["total"] != float64(0) || d["page"] != float64(1) || d["per_page"] != float64(50) {
		t.Errorf("deliveries %s", body)
	}
	resp, body = e.do("POST", path+"/deliveries/99/redeliver", admin, nil)
	e.expect(resp, body, 404)

	resp, body = e.do("DELETE", path, admin, nil)
	e.expect(resp, body, 204)
	for _, m := range []string{"GET", "DELETE"} {
		resp, body = e.do(m, path, admin, nil)
		e.expect(resp, body, 404)
	}
	resp, body = e.do("PUT", path, admin, map[string]any{"description": "x"})
	e.expect(resp, body, 404)
}
