// Package tmpfs gives tests a small folder of its own file system, to
// meet a full disk or a read-only one for real: a tmpfs mounted for the
// test and unmounted at its end. Mounting needs root (CAP_SYS_ADMIN);
// without it the test is skipped and says why.
package tmpfs

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new folder under t.TempDir()
// and returns it. With readOnly, nothing can be written there, even by
// root. The file system is unmounted when the test ends.
func Mount(t testing.TB, size int64, readOnly bool) string {
	t.Helper()
	dir := t.TempDir() + "/fs"
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("size=%d,mode=0777", size)
	if readOnly {
		opts += ",ro"
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
