package googledrive_test

import (
	"io"
	"net"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/integrations/googledrive"
	"docflow/integrations/googledrive/drivetest"
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
// Drive with the default chunk size.
func TestContract(t *testing.T) {
	srv, full := drivetest.New(t), drivetest.New(t)
	full.SetQuota(1)
	folder, ro := srv.Mkdir("root", "out"), srv.Mkdir("root", "readonly")
	srv.ReadOnly(ro)
	client := func(s *drivetest.Server, url, folder, refresh string) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient {
			o := options(s)
			o.ChunkSize = 0
			if url != "" {
				o.APIURL, o.TokenURL = url, url+"/token"
			}
			c, err := googledrive.New(googledrive.Config{FolderID: folder, RefreshToken: refresh, ClientID: drivetest.ClientID, ClientSecret: drivetest.ClientSecret}, o)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	desttest.Run(t, desttest.Target{
		New:  client(srv, "", folder, drivetest.RefreshToken),
		List: func(testing.TB) []string { return srv.Names(folder) },
		Open: func(t testing.TB, remote string) io.ReadCloser {
			rc, err := srv.Open(remote)
			if err != nil {
				t.Fatalf("open %q: %v", remote, err)
			}
			return rc
		},
		Unreachable:    client(srv, closedURL(t), folder, drivetest.RefreshToken),
		BadCredentials: client(srv, "", folder, "revoked"),
		Forbidden:      client(srv, "", ro, drivetest.RefreshToken),
		Full:           client(full, "", "root", drivetest.RefreshToken),
	})
}
