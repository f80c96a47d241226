package app_test

import (
	"strings"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport/gotify"
)

// POST /api/diagnostic/test-notification reaches a real Gotify server
// through a gotify:// entry of NOTIFICATION_URLS, and says so without the
// application token.
func TestTestNotificationThroughGotify(t *testing.T) {
	t.Parallel()
	g := gotify.Start(t)
	token := g.NewApplication(t, "docflow")
	a := apptest.New(t, apptest.Options{Env: map[string]string{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
		"NOTIFICATION_URLS": "gotify://" + g.HostPort + "/" + token}})

	status, body, raw := call(t, "POST", a.URL+"/api/diagnostic/test-notification", nil)
	if status != 200 || body["status"] != "success" || body["services_count"] != 1.0 || strings.Contains(raw, token) {
		t.Fatalf("test-notification: %d %s", status, raw)
	}
	res := body["results"].([]any)[0].(map[string]any)
	if res["ok"] != true || res["service"] != "gotify://"+g.HostPort+"/***" {
		t.Errorf("result: %s", raw)
	}
	msgs := g.WaitFor(t, 1, 10*time.Second)
	if len(msgs) != 1 || msgs[0].Title != "docflow test notification" || !strings.Contains(msgs[0].Message, "the channel works") {
		t.Fatalf("gotify received %+v", msgs)
	}
}
