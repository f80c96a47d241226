package paperless_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/integrations/paperless"
	"docflow/integrations/paperless/paperlesstest"
)

// The contract every destination client keeps, against the in-process
// Paperless-ngx taking any file type (the suite delivers bytes no parser
// of Paperless's reads; refusing them is tested in TestFailures).
func TestContract(t *testing.T) {
	srv, forbidden := paperlesstest.New(t), paperlesstest.New(t)
	srv.AcceptAnyType()
	forbidden.SetPermissions("view_document", "view_tag", "view_correspondent", "view_uisettings")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	client := func(url, token string) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient {
			c, err := paperless.New(paperless.Config{URL: url, Token: token},
				paperless.Options{Dialer: loopback(), PollInterval: 5 * time.Millisecond, TaskWait: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	desttest.Run(t, desttest.Target{
		New:  client(srv.URL, paperlesstest.Token),
		List: func(testing.TB) []string { return srv.Names() },
		Open: func(t testing.TB, remote string) io.ReadCloser {
			id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(remote, srv.URL+"/documents/"), "/details"), 10, 64)
			if err != nil {
				t.Fatalf("remote path %q", remote)
			}
			rc, err := srv.Open(id)
			if err != nil {
				t.Fatalf("open %q: %v", remote, err)
			}
			return rc
		},
		Unreachable:    client(closed, paperlesstest.Token),
		BadCredentials: client(srv.URL, "wrong"),
		Forbidden:      client(forbidden.URL, paperlesstest.Token),
		Skip: map[string]string{
			"overwrite": "Paperless cannot replace a document's file through its API; the same bytes delivered again are the earlier document (TestRedelivery)",
			"full":      "the probe writes nothing, so it cannot see a full disk; a delivery's full disk is tested in TestFailures",
		},
	})
}
