package delivery

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
)

// WEBHOOK_ALLOWED_HOSTS entries with a port admit that port of the host
// only, and a receiver that answers in another protocol leaves its text
// out of the delivery log: the error is a fixed class.
func TestAllowListPortsAndFailuresInFixedWords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const mark = "BANNER-7f3a intranet-db-01"
	listed := newReceiver(t, status(http.StatusOK))
	unlisted := newReceiver(t, status(http.StatusOK))
	banner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer banner.Close()
	go func() {
		for {
			c, err := banner.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 " + mark + "\r\n")) //nolint:errcheck
			time.AfterFunc(300*time.Millisecond, func() { c.Close() })
		}
	}()
	port := func(addr string) string { _, p, _ := net.SplitHostPort(strings.TrimPrefix(addr, "http://")); return p }
	allow := "127.0.0.1:" + port(listed.URL) + ",127.0.0.1:" + port(banner.Addr().String())
	if _, err := e.settings.Set(context.Background(), "WEBHOOK_ALLOWED_HOSTS", allow); err != nil {
		t.Fatalf("set %s: %v", allow, err)
	}
	wl := e.webhook(listed.URL, "", docflow.EventDocumentUploaded)
	wu := e.webhook(unlisted.URL, "", docflow.EventDocumentUploaded)
	wb := e.webhook("http://"+banner.Addr().String()+"/hook", "", docflow.EventDocumentUploaded)
	e.start(func(c *Config) { c.RetryDelays = []time.Duration{} })
	e.emit(7)
	for _, w := range []*docflow.Webhook{wl, wu, wb} {
		testsupport.WaitFor(t, time.Minute, "a final attempt", func() bool {
			l := e.deliveries(w)
			return len(l) == 1 && (l[0].Status == docflow.DeliveryDelivered || l[0].Status == docflow.DeliveryFailed)
		})
	}
	if d := e.deliveries(wl)[0]; d.Status != docflow.DeliveryDelivered || len(listed.requests()) != 1 {
		t.Errorf("listed port: %s %q, %d requests", d.Status, deref(d.Error), len(listed.requests()))
	}
	if d := e.deliveries(wu)[0]; d.Status != docflow.DeliveryFailed || !strings.Contains(deref(d.Error), "private or internal") ||
		len(unlisted.requests()) != 0 {
		t.Errorf("another port of a listed host: %s %q, %d requests", d.Status, deref(d.Error), len(unlisted.requests()))
	}
	d := e.deliveries(wb)[0]
	if d.Status != docflow.DeliveryFailed || deref(d.Error) == "" || strings.Contains(deref(d.Error), "7f3a") ||
		strings.Contains(deref(d.Error), "SSH") {
		t.Errorf("receiver speaking another protocol: %s %q", d.Status, deref(d.Error))
	}
}
