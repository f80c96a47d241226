// Package testbin locates the test servers scripts/testbin.sh builds once
// per machine, and finds free ports to start them on.
package testbin

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Path is where scripts/testbin.sh puts server name's binary bin of
// version: $DOCFLOW_TEST_BIN (default $HOME/.cache/docflow-test-bin) /
// <name>-<version>/<bin>.
func Path(name, version, bin string) string {
	dir := os.Getenv("DOCFLOW_TEST_BIN")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "docflow-test-bin")
	}
	return filepath.Join(dir, name+"-"+version, bin)
}

// FreePort returns a TCP port free on 127.0.0.1 now. Another process may
// take it before the server binds it: callers retry a failed start.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Require returns the path of server name's binary bin of version, as
// Path does. When it is missing it fails the test (run make deps), or
// skips it when the environment variable skipEnv is set; title names the
// server in the message, what the tests that need it.
func Require(t testing.TB, title, name, version, bin, skipEnv, what string) string {
	t.Helper()
	p := Path(name, version, bin)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv(skipEnv) != "" {
			t.Skipf("%s %s not built (%s) and %s is set", title, version, p, skipEnv)
		}
		t.Fatalf("%s %s is not built at %s: run `make deps` (scripts/testbin.sh) once, or set %s=1 to skip %s",
			title, version, p, skipEnv, what)
	}
	return p
}

// Start calls start up to three times, since a free port may be taken
// between choosing and binding, and fails the test if none succeeds.
func Start[S any](t testing.TB, title string, start func() (S, error)) S {
	t.Helper()
	var lastErr error
	for range 3 {
		s, err := start()
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start %s: %v", title, lastErr)
	var zero S
	return zero
}
