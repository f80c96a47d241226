package legacy

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"docflow"
)

func TestFolderConfinesPaths(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "workdir")
	for p, text := range map[string]string{
		filepath.Join(dir, "original", "a.pdf"):  "original",
		filepath.Join(dir, "processed", "a.pdf"): "processed",
		filepath.Join(base, "secret.txt"):        "secret",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link inside the folder to a file outside it, one to a file inside,
	// and a pipe (opening it would wait for a writer).
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "original", "out.pdf")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.pdf", filepath.Join(dir, "original", "in.pdf")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "original", "pipe.pdf"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFolder(dir, "/srv/docuelevate")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	for _, c := range []struct {
		recorded string
		want     string // the content, or "" for an error
		err      error
	}{
		{"/srv/docuelevate/original/a.pdf", "original", nil},      // under the original's WORKDIR
		{filepath.Join(dir, "processed/a.pdf"), "processed", nil}, // under the folder itself
		{"original/a.pdf", "original", nil},                       // relative to the folder
		{"/srv/docuelevate/original/in.pdf", "original", nil},     // a link that stays inside
		{"/srv/docuelevate/../secret.txt", "", ErrOutside},
		{"../secret.txt", "", ErrOutside},
		{"original/../../secret.txt", "", ErrOutside},
		{filepath.Join(base, "secret.txt"), "", ErrOutside},
		{"/etc/passwd", "", ErrOutside},
		{"/srv/docuelevate/original/out.pdf", "", ErrOutside}, // a link pointing out
		{"/srv/docuelevate/original/none.pdf", "", ErrMissing},
		{"", "", ErrMissing},
		{"/srv/docuelevate/original", "", ErrNotFile},
		{"/srv/docuelevate/original/pipe.pdf", "", ErrNotFile},
	} {
		rc, _, err := f.Open(c.recorded)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%q: %v, want %v", c.recorded, err, c.err)
			}
			if rc != nil {
				rc.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.recorded, err)
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != c.want {
			t.Errorf("%q: %q, want %q", c.recorded, b, c.want)
		}
	}
}

func TestOpenFolderRefusals(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"relative", ""}, {file, ""}, {file + "-none", ""}, {t.TempDir(), "relative"}} {
		if _, err := OpenFolder(c[0], c[1]); docflow.ErrorCode(err) != docflow.EINVALID {
			t.Errorf("%v: %v", c, err)
		}
	}
}
