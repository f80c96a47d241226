package webdav

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/webdav"

	"docflow"
	"docflow/internal/netguard"
)

func TestParseConfig(t *testing.T) {
	nc := &docflow.Integration{IntegrationType: docflow.IntegrationNextcloud,
		Config:      map[string]any{"url": "https://cloud.example.com/nc/", "path": "/Documents/Scans"},
		Credentials: map[string]string{"username": "ann@example.com", "password": "app-pass"}}
	cfg, err := ParseConfig(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, netguard.Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Location(); got != "Nextcloud folder https://cloud.example.com/nc/remote.php/dav/files/ann@example.com/Documents/Scans" {
		t.Fatal(got)
	}
	for _, bad := range []map[string]any{
		{"url": "ftp://x/"}, {"url": "https://x/?a=b"}, {"url": "https://u:p@x/"}, {"url": "https://x/", "path": "a/../../b"},
	} {
		if _, err := ParseConfig(&docflow.Integration{IntegrationType: docflow.IntegrationWebDAV, Config: bad}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	delete(nc.Credentials, "password")
	if _, err := ParseConfig(nc); err == nil {
		t.Error("Nextcloud without an app password")
	}
}

// A server with a private CA is trusted through config.ca_certificate
// only; a private address is refused unless allowed.
func TestTLSAndAllowList(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewTLSServer(&webdav.Handler{FileSystem: webdav.Dir(dir), LockSystem: webdav.NewMemLS()})
	defer srv.Close()
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	in := &docflow.Integration{IntegrationType: docflow.IntegrationWebDAV, Config: map[string]any{"url": srv.URL, "path": "/in"}}
	deliver := func(d netguard.Dialer) error {
		c, err := NewIntegration(in, d)
		if err != nil {
			return err
		}
		ctx := context.Background()
		if err := c.Connect(ctx); err != nil {
			return err
		}
		_, err = c.Deliver(ctx, docflow.DestinationDoc{Name: "a.pdf", Size: 3}, strings.NewReader("abc"))
		return err
	}
	err := deliver(loopback)
	if docflow.DestinationFailureOf(err) != docflow.DestUnavailable || !strings.Contains(err.Error(), netguard.FailUntrusted) {
		t.Fatalf("untrusted: %v", err)
	}
	in.Config["ca_certificate"] = caPEM
	if err := deliver(loopback); err != nil {
		t.Fatalf("with ca_certificate: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "in", "a.pdf")); err != nil || string(b) != "abc" {
		t.Fatal(string(b), err)
	}
	err = deliver(netguard.Dialer{})
	if docflow.DestinationFailureOf(err) != docflow.DestForbidden || !strings.Contains(err.Error(), netguard.FailPrivate) {
		t.Fatalf("private address: %v", err)
	}
	// The tester says the same.
	ok, msg := docflow.DestinationTester{New: func(in *docflow.Integration) (docflow.DestinationClient, error) {
		return NewIntegration(in, netguard.Dialer{})
	}}.TestIntegration(context.Background(), in)
	if ok || !strings.Contains(msg, netguard.FailPrivate) || !strings.Contains(msg, srv.URL+"/in") {
		t.Fatal(ok, msg)
	}
	_ = http.StatusOK
}
