// Package versitygw runs versitygw, a real S3 gateway over a local
// folder (its posix backend: a bucket is a folder, an object a file), for
// tests, on a free 127.0.0.1 port. The binary is built once per machine
// by scripts/testbin.sh into $HOME/.cache/docflow-test-bin/versitygw-<Version>/.
package versitygw

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow/internal/testsupport/testbin"
)

// Version is the versitygw release scripts/testbin.sh builds.
const Version = "v1.8.0"

// Root account of every server started here.
const (
	AccessKey = "docflowtestkey"
	SecretKey = "docflowtestsecret123"
	Region    = "us-east-1"
)

// Binary is where scripts/testbin.sh puts the versitygw binary.
func Binary() string { return testbin.Path("versitygw", Version, "versitygw") }

// Server is a running versitygw.
type Server struct {
	// Endpoint is the S3 endpoint URL (path-style addressing).
	Endpoint string
	// Dir is the folder holding the buckets (Dir/<bucket>/<key>).
	Dir string
	bin string
}

// Start runs versitygw until the test ends, serving dir (a new
// temporary folder when empty). It fails the test when the binary is
// missing (run make deps), and skips it only when DOCFLOW_SKIP_VERSITYGW
// is set.
func Start(t testing.TB, dir string) *Server {
	t.Helper()
	bin := testbin.Require(t, "versitygw", "versitygw", Version, "versitygw", "DOCFLOW_SKIP_VERSITYGW", "the S3 tests")
	if dir == "" {
		dir = t.TempDir()
	}
	return testbin.Start(t, "versitygw", func() (*Server, error) {
		s, stop, err := start(bin, t.TempDir(), dir)
		if err != nil {
			return nil, err
		}
		t.Cleanup(stop)
		return s, nil
	})
}

// Run starts versitygw on dir outside a test (the benchmarks), its state
// under run; stop ends it.
func Run(run, dir string) (s *Server, stop func(), err error) {
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		return nil, nil, fmt.Errorf("versitygw %s is not built at %s: run make deps (scripts/testbin.sh)", Version, bin)
	}
	for range 3 {
		if s, stop, err = start(bin, run, dir); err == nil {
			return s, stop, nil
		}
	}
	return nil, nil, err
}

func start(bin, run, dir string) (*Server, func(), error) {
	port, err := testbin.FreePort()
	if err != nil {
		return nil, nil, err
	}
	iam := filepath.Join(run, "iam")
	if err := os.MkdirAll(iam, 0o700); err != nil {
		return nil, nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proc, err := testbin.Launch("versitygw", run, bin,
		[]string{"--port", addr, "--keep-alive", "--quiet", "--iam-dir", iam, "posix", dir},
		func(c *exec.Cmd) {
			c.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
		})
	if err != nil {
		return nil, nil, err
	}
	s := &Server{Endpoint: "http://" + addr, Dir: dir, bin: bin}
	if err := proc.WaitReady(20*time.Second, addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return nil, nil, err
	}
	return s, proc.Stop, nil
}

// CreateUser adds an account with role "user": it owns no bucket and may
// not write into the root account's buckets.
func (s *Server) CreateUser(t testing.TB, access, secret string) {
	t.Helper()
	out, err := exec.Command(s.bin, "admin", "--access", AccessKey, "--secret", SecretKey,
		"--endpoint-url", s.Endpoint, "create-user", "--access", access, "--secret", secret, "--role", "user").CombinedOutput()
	if err != nil {
		t.Fatalf("versitygw create-user: %v: %s", err, strings.TrimSpace(string(out)))
	}
}

// Path is where the object key of bucket is stored on disk.
func (s *Server) Path(bucket, key string) string {
	return filepath.Join(s.Dir, bucket, filepath.FromSlash(key))
}

func (s *Server) String() string { return fmt.Sprintf("versitygw %s at %s", Version, s.Endpoint) }
