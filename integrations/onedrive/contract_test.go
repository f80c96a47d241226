package onedrive_test

import (
	"io"
	"net"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/integrations/onedrive"
	"docflow/integrations/onedrive/onedrivetest"
)

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
// Graph with the default fragment size.
func TestContract(t *testing.T) {
	srv, full := onedrivetest.New(t), onedrivetest.New(t)
	full.SetQuota(1)
	srv.ReadOnly("/readonly")
	const folder = "/docflow/out"
	client := func(s *onedrivetest.Server, url, folder, secret string) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient {
			o := options(s)
			o.ChunkSize = 0
			if url != "" {
				o.APIURL, o.LoginURL = url, url
			}
			c, err := onedrive.New(onedrive.Config{Folder: folder, RefreshToken: onedrivetest.RefreshToken, ClientID: onedrivetest.ClientID, ClientSecret: secret}, o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	desttest.Run(t, desttest.Target{
		New:  client(srv, "", folder, onedrivetest.ClientSecret),
		List: func(testing.TB) []string { return srv.Names(folder) },
		Open: func(t testing.TB, remote string) io.ReadCloser {
			rc, err := srv.Open(remote)
			if err != nil {
				t.Fatalf("open %q: %v", remote, err)
			}
			return rc
		},
		Unreachable:    client(srv, closedURL(t), folder, onedrivetest.ClientSecret),
		BadCredentials: client(srv, "", folder, "wrong secret"),
		Forbidden:      client(srv, "", "/readonly", onedrivetest.ClientSecret),
		Full:           client(full, "", folder, onedrivetest.ClientSecret),
	})
}
