package dropbox_test

import (
	"io"
	"net"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/integrations/dropbox"
	"docflow/integrations/dropbox/dropboxtest"
)

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// The contract every destination client keeps, against the in-process
// Dropbox with the default chunk size.
func TestContract(t *testing.T) {
	srv, full := dropboxtest.New(t), dropboxtest.New(t)
	full.SetQuota(1)
	srv.ReadOnly("/readonly")
	const folder = "/docflow/out"
	client := func(s *dropboxtest.Server, url, folder, refresh string) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient {
			o := options(s, 0)
			if url != "" {
				o.APIURL, o.ContentURL = url, url
			}
			c, err := dropbox.New(dropbox.Config{Folder: folder, RefreshToken: refresh, AppKey: dropboxtest.AppKey, AppSecret: dropboxtest.AppSecret}, o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	desttest.Run(t, desttest.Target{
		New:  client(srv, "", folder, dropboxtest.RefreshToken),
		List: func(testing.TB) []string { return srv.Names(folder) },
		Open: func(t testing.TB, remote string) io.ReadCloser {
			rc, err := srv.Open(remote)
			if err != nil {
				t.Fatalf("open %q: %v", remote, err)
			}
			return rc
		},
		Unreachable:    client(srv, closedURL(t), folder, dropboxtest.RefreshToken),
		BadCredentials: client(srv, "", folder, "revoked"),
		Forbidden:      client(srv, "", "/readonly", dropboxtest.RefreshToken),
		Full:           client(full, "", folder, dropboxtest.RefreshToken),
	})
}
