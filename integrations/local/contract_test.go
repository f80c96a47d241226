package local

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"docflow"
	"docflow/integrations/desttest"
	"docflow/internal/testsupport/tmpfs"
)

func TestContract(t *testing.T) {
	root := t.TempDir()
	in := &docflow.Integration{OwnerID: "ann@example.com", IntegrationType: docflow.IntegrationLocal,
		Config: map[string]any{"path": "contract/out"}}
	client := func(root string) func(testing.TB) docflow.DestinationClient {
		return func(t testing.TB) docflow.DestinationClient {
			c, err := NewClient(func() string { return root }, in)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	folder := filepath.Join(root, "ann@example.com", "contract", "out")
	desttest.Run(t, desttest.Target{
		New: client(root),
		List: func(t testing.TB) []string {
			var names []string
			entries, err := os.ReadDir(folder)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return names
		},
		Open: func(t testing.TB, remote string) io.ReadCloser {
			f, err := os.Open(filepath.Join(root, filepath.FromSlash(remote)))
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
		Forbidden: func(t testing.TB) docflow.DestinationClient {
			return client(tmpfs.Mount(t, 1<<20, true))(t)
		},
		Full: func(t testing.TB) docflow.DestinationClient {
			dir := tmpfs.Mount(t, 64<<10, false)
			// Fill it, so that the delivery (not the folder) meets the full disk.
			if err := os.MkdirAll(filepath.Join(dir, "ann@example.com", "contract", "out"), 0o750); err != nil {
				t.Fatal(err)
			}
			fill(t, filepath.Join(dir, "filler"))
			return client(dir)(t)
		},
		Skip: map[string]string{
			"unreachable":     "a folder on this machine is always there",
			"bad_credentials": "a local folder takes no credentials",
		},
	})
}

// fill writes into path until the file system is full.
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

var _ fs.FS = os.DirFS(".")
