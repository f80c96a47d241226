// Package davserver runs real WebDAV servers for tests, on free 127.0.0.1
// ports, serving a folder of the test: rclone's `serve webdav` (whose
// server is golang.org/x/net/webdav) and Apache httpd's mod_dav, an
// independent implementation that differs in status codes and locking.
// Both are Debian packages (scripts/install-deps.sh test installs rclone
// and apache2-bin); a missing one fails the test unless DOCFLOW_SKIP_WEBDAV
// is set, which skips it.
package davserver

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow/internal/testsupport/testbin"
)

// Server is a running WebDAV server.
type Server struct {
	// URL is the server's address; files are under URL + Prefix.
	URL string
	// Prefix is the URL path the served folder appears at ("" or, for
	// a Nextcloud layout, "/remote.php/dav/files/<user>").
	Prefix string
	// Dir is the folder served.
	Dir string
	// Port the server listens on.
	Port int
}

// Options shape a server.
type Options struct {
	// Dir is the folder to serve (default: a new temporary folder).
	Dir string
	// User and Pass are the account that may read and write.
	User, Pass string
	// Prefix is the URL path to serve Dir at (rclone: --baseurl; Apache:
	// an Alias), e.g. "/remote.php/dav/files/ann".
	Prefix string
	// ReadOnly refuses every write (rclone --read-only).
	ReadOnly bool
	// Reader, when set, is a second Apache account that may read and not
	// write (PUT, MKCOL, DELETE… answer 403).
	Reader, ReaderPass string
}

func require(t testing.TB, bin, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(bin)
	if err != nil {
		if os.Getenv("DOCFLOW_SKIP_WEBDAV") != "" {
			t.Skipf("%s is not installed and DOCFLOW_SKIP_WEBDAV is set", bin)
		}
		t.Fatalf("%s is not installed: run scripts/install-deps.sh test (Debian package %s), or set DOCFLOW_SKIP_WEBDAV=1 to skip the WebDAV tests", bin, pkg)
	}
	return p
}

// Rclone starts `rclone serve webdav` until the test ends.
func Rclone(t testing.TB, o Options) *Server {
	t.Helper()
	bin := require(t, "rclone", "rclone")
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	return testbin.Start(t, "rclone serve webdav", func() (*Server, error) {
		s, stop, err := startRclone(bin, t.TempDir(), o)
		if err != nil {
			return nil, err
		}
		t.Cleanup(stop)
		return s, nil
	})
}

// RunRclone starts `rclone serve webdav` on o.Dir outside a test (the
// benchmarks), its state under run; stop ends it.
func RunRclone(run string, o Options) (s *Server, stop func(), err error) {
	bin, err := exec.LookPath("rclone")
	if err != nil {
		return nil, nil, fmt.Errorf("rclone is not installed (scripts/install-deps.sh test): %w", err)
	}
	for range 3 {
		if s, stop, err = startRclone(bin, run, o); err == nil {
			return s, stop, nil
		}
	}
	return nil, nil, err
}

func startRclone(bin, run string, o Options) (*Server, func(), error) {
	port, err := testbin.FreePort()
	if err != nil {
		return nil, nil, err
	}
	args := []string{"serve", "webdav", o.Dir, "--addr", "127.0.0.1:" + strconv.Itoa(port),
		"--config", filepath.Join(run, "rclone.conf"), "--cache-dir", filepath.Join(run, "cache")}
	if o.User != "" {
		args = append(args, "--user", o.User, "--pass", o.Pass)
	}
	if o.Prefix != "" {
		args = append(args, "--baseurl", o.Prefix)
	}
	if o.ReadOnly {
		args = append(args, "--read-only")
	}
	proc, err := testbin.Launch("rclone", run, bin, args, func(c *exec.Cmd) {
		// rclone's S3 code chokes on this machine's AWS_CA_BUNDLE.
		c.Env = withoutEnv(os.Environ(), "AWS_CA_BUNDLE")
	})
	if err != nil {
		return nil, nil, err
	}
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), Prefix: o.Prefix, Dir: o.Dir, Port: port}
	if err := proc.WaitReady(20*time.Second, s.URL, func() bool { return answers(s.URL + o.Prefix + "/") }); err != nil {
		return nil, nil, err
	}
	return s, proc.Stop, nil
}

// apacheModules is where Debian's apache2-bin keeps its modules.
const apacheModules = "/usr/lib/apache2/modules"

// Apache starts Apache httpd with mod_dav and mod_dav_fs until the test
// ends, Basic authentication from an htpasswd file.
func Apache(t testing.TB, o Options) *Server {
	t.Helper()
	bin := require(t, "apache2", "apache2-bin")
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.User == "" {
		t.Fatal("davserver: Apache needs a user")
	}
	return testbin.Start(t, "apache2 (mod_dav)", func() (*Server, error) {
		port, err := testbin.FreePort()
		if err != nil {
			return nil, err
		}
		run := t.TempDir()
		htpasswd, err := htpasswdLines(map[string]string{o.User: o.Pass, o.Reader: o.ReaderPass})
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(run, "htpasswd"), []byte(htpasswd), 0o600); err != nil {
			return nil, err
		}
		conf := apacheConf(run, o, port)
		if err := os.WriteFile(filepath.Join(run, "httpd.conf"), []byte(conf), 0o600); err != nil {
			return nil, err
		}
		// The folder is written by the server's own user (root here,
		// as the test runs).
		proc, err := testbin.Launch("apache2", run, bin, []string{"-f", filepath.Join(run, "httpd.conf"), "-DFOREGROUND"}, nil)
		if err != nil {
			return nil, err
		}
		s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), Prefix: o.Prefix, Dir: o.Dir, Port: port}
		if err := proc.WaitReady(20*time.Second, s.URL, func() bool { return answers(s.URL + "/") }); err != nil {
			return nil, err
		}
		t.Cleanup(proc.Stop)
		return s, nil
	})
}

func apacheConf(run string, o Options, port int) string {
	prefix := o.Prefix
	if prefix == "" {
		prefix = "/"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ServerRoot %q\nServerName 127.0.0.1\nListen 127.0.0.1:%d\nPidFile %q\nErrorLog %q\nLogLevel warn\n",
		run, port, filepath.Join(run, "httpd.pid"), filepath.Join(run, "error.log"))
	for _, m := range []string{"mpm_event", "authz_core", "authz_user", "authn_core", "authn_file", "auth_basic", "dav", "dav_fs", "alias"} {
		fmt.Fprintf(&b, "LoadModule %s_module %s/mod_%s.so\n", m, apacheModules, m)
	}
	fmt.Fprintf(&b, "DavLockDB %q\nDocumentRoot %q\n", filepath.Join(run, "davlock"), filepath.Join(run, "empty"))
	os.MkdirAll(filepath.Join(run, "empty"), 0o755) //nolint:errcheck // an empty document root
	fmt.Fprintf(&b, "Alias %q %q\n", strings.TrimSuffix(prefix, "/")+"/", strings.TrimSuffix(o.Dir, "/")+"/")
	fmt.Fprintf(&b, "<Directory %q>\n  Dav On\n  AuthType Basic\n  AuthName dav\n  AuthUserFile %q\n  AuthzSendForbiddenOnFailure On\n",
		o.Dir, filepath.Join(run, "htpasswd"))
	if o.Reader != "" {
		fmt.Fprintf(&b, "  <Limit GET HEAD OPTIONS PROPFIND>\n    Require valid-user\n  </Limit>\n  <LimitExcept GET HEAD OPTIONS PROPFIND>\n    Require user %s\n  </LimitExcept>\n", o.User)
	} else {
		b.WriteString("  Require valid-user\n")
	}
	b.WriteString("</Directory>\n")
	return b.String()
}

// htpasswdLines makes an htpasswd file (apr1 hashes, by openssl).
func htpasswdLines(users map[string]string) (string, error) {
	var b strings.Builder
	for u, p := range users {
		if u == "" {
			continue
		}
		out, err := exec.Command("openssl", "passwd", "-apr1", p).Output()
		if err != nil {
			return "", fmt.Errorf("openssl passwd: %w", err)
		}
		fmt.Fprintf(&b, "%s:%s\n", u, strings.TrimSpace(string(out)))
	}
	return b.String(), nil
}

// answers tells whether an HTTP server answers at url (any status).
func answers(url string) bool {
	c := http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{}).DialContext}}
	rs, err := c.Get(url)
	if err != nil {
		return false
	}
	rs.Body.Close()
	return true
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
