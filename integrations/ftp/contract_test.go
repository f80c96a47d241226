package ftp_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/integrations/ftp"
	"docflow/internal/testsupport/testbin"
	"docflow/internal/testsupport/vsftpd"
)

// TestContract runs the destination contract suite against vsftpd (explicit TLS).
func TestContract(t *testing.T) {
	s := vsftpd.Start(t, vsftpd.Options{TLS: true})
	const folder = "/upload/contract"
	newClient := func(in *docflow.Integration) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient {
			c, err := ftp.New(in, allowLoopback)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	closed, err := testbin.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	unreachable := integration(s, folder, nil)
	unreachable.Config["port"] = float64(closed)
	desttest.Run(t, desttest.Target{
		New: newClient(integration(s, folder, nil)),
		List: func(t testing.TB) []string {
			entries, err := os.ReadDir(filepath.Join(s.Root, folder))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			var out []string
			for _, e := range entries {
				out = append(out, e.Name())
			}
			return out
		},
		Open: func(t testing.TB, remote string) io.ReadCloser {
			f, err := os.Open(filepath.Join(s.Root, remote))
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		Unreachable:    newClient(unreachable),
		BadCredentials: newClient(integration(s, folder, map[string]string{"username": s.User.Name, "password": "wrong"})),
		Forbidden:      newClient(integration(s, "/readonly", nil)),
		Skip: map[string]string{"full": "vsftpd answers a full disk with 451 (a local error, which FTP also answers " +
			"for passing failures), so the delivery is retried as unavailable; replies 452 and 552 are DestFull (TestReplyClasses, TestFullDisk)"},
	})
}
