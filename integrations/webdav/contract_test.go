package webdav

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/internal/netguard"
	"docflow/internal/testsupport/davserver"
	"docflow/internal/testsupport/testbin"
	"docflow/internal/testsupport/tmpfs"
)

var loopback = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}

// integration is a WEBDAV or NEXTCLOUD integration of s.
func integration(typ string, s *davserver.Server, folder, user, pass string) *docflow.Integration {
	u := s.URL + s.Prefix
	if typ == docflow.IntegrationNextcloud {
		u = s.URL // the server root: the client adds Nextcloud's layout
	}
	return &docflow.Integration{IntegrationType: typ, Config: map[string]any{"url": u, "path": folder},
		Credentials: map[string]string{"username": user, "password": pass}}
}

func clientOf(in *docflow.Integration) func(testing.TB) docflow.DestinationClient {
	return func(t testing.TB) docflow.DestinationClient {
		c, err := NewIntegration(in, loopback)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// target is the contract suite's view of a server that serves a local
// folder: what arrived is read there.
func target(typ string, s *davserver.Server, folder string) desttest.Target {
	dir := filepath.Join(s.Dir, filepath.FromSlash(folder))
	closed, err := testbin.FreePort()
	if err != nil {
		panic(err)
	}
	nowhere := &davserver.Server{URL: "http://127.0.0.1:" + strconv.Itoa(closed), Prefix: s.Prefix}
	return desttest.Target{
		New: clientOf(integration(typ, s, folder, "u", "p")),
		List: func(t testing.TB) []string {
			entries, err := os.ReadDir(dir)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return names
		},
		Open: func(t testing.TB, remote string) io.ReadCloser {
			f, err := os.Open(filepath.Join(s.Dir, filepath.FromSlash(remote)))
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		Unreachable:    clientOf(integration(typ, nowhere, folder, "u", "p")),
		BadCredentials: clientOf(integration(typ, s, folder, "u", "wrong")),
	}
}

func TestContractRclone(t *testing.T) {
	s := davserver.Rclone(t, davserver.Options{User: "u", Pass: "p"})
	tg := target(docflow.IntegrationWebDAV, s, "/docflow/out")
	tg.Forbidden = func(t testing.TB) docflow.DestinationClient {
		ro := davserver.Rclone(t, davserver.Options{User: "u", Pass: "p", ReadOnly: true})
		return clientOf(integration(docflow.IntegrationWebDAV, ro, "/", "u", "p"))(t)
	}
	tg.Skip = map[string]string{"full": "x/net/webdav (rclone's server) answers 405 to a write the disk refuses, indistinguishable from other refusals"}
	desttest.Run(t, tg)
}

func TestContractApache(t *testing.T) {
	s := davserver.Apache(t, davserver.Options{User: "u", Pass: "p", Reader: "reader", ReaderPass: "rp"})
	tg := target(docflow.IntegrationWebDAV, s, "/docflow/out")
	tg.Forbidden = clientOf(integration(docflow.IntegrationWebDAV, s, "/docflow/out", "reader", "rp"))
	tg.Full = func(t testing.TB) docflow.DestinationClient {
		full := davserver.Apache(t, davserver.Options{User: "u", Pass: "p", Dir: tmpfs.Mount(t, 256<<10, false)})
		if err := os.MkdirAll(filepath.Join(full.Dir, "out"), 0o755); err != nil {
			t.Fatal(err)
		}
		fill(t, filepath.Join(full.Dir, "filler"))
		return clientOf(integration(docflow.IntegrationWebDAV, full, "/out", "u", "p"))(t)
	}
	desttest.Run(t, tg)
}

// Nextcloud keeps a user's files at /remote.php/dav/files/<user>/: a
// WebDAV server serving that path stands in for it.
func TestContractNextcloudLayout(t *testing.T) {
	s := davserver.Rclone(t, davserver.Options{User: "u", Pass: "p", Prefix: "/remote.php/dav/files/u"})
	tg := target(docflow.IntegrationNextcloud, s, "/Documents/docflow")
	tg.Skip = map[string]string{
		"forbidden": "checked against WebDAV servers (TestContractApache)",
		"full":      "checked against WebDAV servers (TestContractApache)",
		"large":     "the same client as WEBDAV (TestContractRclone, TestContractApache)",
	}
	desttest.Run(t, tg)
}

func fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}
