// Package testbin locates the test servers scripts/testbin.sh builds once
// per machine, and finds free ports to start them on.
package testbin

import (
	"net"
	"os"
	"path/filepath"
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
