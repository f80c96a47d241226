package paperless_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/paperless"
	"docflow/internal/netguard"
)

// TestLive delivers to a real Paperless-ngx when PAPERLESS_LIVE_URL and
// PAPERLESS_LIVE_TOKEN are set (PAPERLESS_LIVE_ALLOWED_HOST admits a
// private address).
func TestLive(t *testing.T) {
	u, tok := os.Getenv("PAPERLESS_LIVE_URL"), os.Getenv("PAPERLESS_LIVE_TOKEN")
	if u == "" || tok == "" {
		t.Skip("live Paperless-ngx test: set PAPERLESS_LIVE_URL and PAPERLESS_LIVE_TOKEN to run it")
	}
	dialer := netguard.Dialer{Allowed: func() []string { return []string{os.Getenv("PAPERLESS_LIVE_ALLOWED_HOST")} }}
	c, err := paperless.New(paperless.Config{URL: u, Token: tok}, paperless.Options{Dialer: dialer, TaskWait: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	data := []byte("docflow live test " + time.Now().Format(time.RFC3339Nano) + "\n")
	doc := docflow.DestinationDoc{Name: "docflow-live.txt", MimeType: "text/plain", Size: int64(len(data)),
		Title: "docflow live test", Tags: []string{"docflow-live-test"}, Correspondent: "docflow"}
	first, err := c.Deliver(ctx, doc, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Deliver(ctx, doc, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delivered to %s, again to %s", first, again)
}
