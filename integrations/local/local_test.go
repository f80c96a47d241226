package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"docflow"
)

func TestFolderStaysInsideTheOwnersFolder(t *testing.T) {
	for _, tc := range []struct{ owner, path, want string }{
		{"ann@example.com", "invoices", "/r/ann@example.com/invoices"},
		{"ann", "/abs/x", "/r/ann/abs/x"},
		{"", "x", "/r/shared/x"},
		{"../evil", "x", "/r/_evil/x"},
		{"ann", "a/./b/", "/r/ann/a/b"},
	} {
		got, err := Folder("/r", tc.owner, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("%q %q: %q %v", tc.owner, tc.path, got, err)
		}
	}
	if _, err := Folder("/r", "ann", "a/../../bob"); err == nil {
		t.Error("escaped into bob's folder")
	}
	if _, err := Folder("", "ann", "x"); err == nil {
		t.Error("no root")
	}
}

func TestTesterWritesAndReports(t *testing.T) {
	root := t.TempDir()
	tt := Tester{Root: func() string { return root }}
	in := &docflow.Integration{OwnerID: "ann", IntegrationType: "LOCAL", Config: map[string]any{"path": "out/2026"}}
	ok, msg := tt.TestIntegration(context.Background(), in)
	if !ok || msg != "Connected to folder ann/out/2026, and wrote and removed a test file" {
		t.Fatal(ok, msg)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "ann", "out", "2026"))
	if len(entries) != 0 {
		t.Fatalf("probe left behind: %v", entries)
	}
	// A file where the folder should be.
	if err := os.WriteFile(filepath.Join(root, "ann", "blocked"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.Config["path"] = "blocked/sub"
	ok, msg = tt.TestIntegration(context.Background(), in)
	if ok || !strings.Contains(msg, "cannot create folder ann/blocked/sub") || strings.Contains(msg, root) {
		t.Fatal(ok, msg)
	}
	// A link out of the tree.
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "ann", "link")); err != nil {
		t.Fatal(err)
	}
	in.Config["path"] = "link"
	if ok, msg = tt.TestIntegration(context.Background(), in); ok || !strings.Contains(msg, "outside") {
		t.Fatal(ok, msg)
	}
	// Not configured.
	ok, msg = Tester{Root: func() string { return "" }}.TestIntegration(context.Background(), in)
	if ok || !strings.Contains(msg, "LOCAL_DESTINATION_DIR is not set") {
		t.Fatal(ok, msg)
	}
}

// TestConnectRemovesStaleTemps: connecting removes the temporary files a
// delivery killed before its rename left, once they are old enough, and
// leaves younger ones (a delivery may still be writing) and documents.
func TestConnectRemovesStaleTemps(t *testing.T) {
	root := t.TempDir()
	c, err := NewClient(func() string { return root }, &docflow.Integration{OwnerID: "ann", Config: map[string]any{"path": "out"}})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Folder(root, "ann", "out")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for name, mtime := range map[string]time.Time{".incoming-1": old, ".incoming-2": time.Now(), "doc.pdf": old} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{".incoming-1": false, ".incoming-2": true, "doc.pdf": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", name, err == nil, want)
		}
	}
}
