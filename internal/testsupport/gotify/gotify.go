// Package gotify runs a Gotify server (github.com/gotify/server/v2, a real
// push notification server with a REST API) for tests, on a free
// 127.0.0.1 port with a temporary config and SQLite database. The binary
// is built once per machine by scripts/testbin.sh (make deps) into
// $HOME/.cache/docflow-test-bin/gotify-<Version>/.
package gotify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"docflow/internal/testsupport/testbin"
)

// Version is the Gotify release scripts/testbin.sh builds.
const Version = "v2.6.1"

// The admin account the server creates on its first start.
const (
	adminUser = "admin"
	adminPass = "docflow-test"
)

// Binary is where scripts/testbin.sh puts the gotify binary
// (DOCFLOW_TEST_BIN overrides the cache folder).
func Binary() string { return testbin.Path("gotify", Version, "gotify") }

// Server is a running Gotify.
type Server struct {
	// URL is its base URL (http://127.0.0.1:port).
	URL string
	// HostPort is URL's host and port, for gotify:// notification URLs.
	HostPort string
}

// Start runs Gotify until the test ends. It fails the test when the
// binary is missing (run make deps), and skips it only when
// DOCFLOW_SKIP_GOTIFY is set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := testbin.Require(t, "Gotify", "gotify", Version, "gotify", "DOCFLOW_SKIP_GOTIFY", "the Gotify tests")
	return testbin.Start(t, "Gotify", func() (*Server, error) { return start(t, bin) })
}

// config is the server's config.yml: loopback only, a SQLite file in the
// test's folder, the cheapest bcrypt cost (sign-ins are per request).
const config = `server:
  listenaddr: "127.0.0.1"
  port: %d
  ssl:
    enabled: false
database:
  dialect: sqlite3
  connection: %s
defaultuser:
  name: %s
  pass: %s
passstrength: 4
uploadedimagesdir: %s
pluginsdir: ""
registration: false
`

func start(t testing.TB, bin string) (*Server, error) {
	port, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	conf := fmt.Sprintf(config, port, filepath.Join(dir, "gotify.db"), adminUser, adminPass, filepath.Join(dir, "images"))
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	proc, err := testbin.Launch("gotify", dir, bin, nil, func(cmd *exec.Cmd) {
		cmd.Dir = dir // gotify reads ./config.yml
		// Environment variables override the file (GOTIFY_ prefix): keep
		// the caller's out.
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	})
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), HostPort: "127.0.0.1:" + strconv.Itoa(port)}
	if err := proc.WaitReady(30*time.Second, s.URL, func() bool {
		var h struct {
			Health   string `json:"health"`
			Database string `json:"database"`
		}
		return s.do("GET", "/health", nil, &h) == nil && h.Health == "green" && h.Database == "green"
	}); err != nil {
		return nil, err
	}
	t.Cleanup(proc.Stop)
	return s, nil
}

var client = &nethttp.Client{Timeout: 10 * time.Second}

// do sends a request as the admin user (basic auth) and decodes a 2xx
// answer into out (when not nil).
func (s *Server) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, s.URL+path, rd)
	if err != nil {
		return err
	}
	req.SetBasicAuth(adminUser, adminPass)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// NewApplication creates an application named name and returns its token,
// which senders of messages present (X-Gotify-Key, or a gotify:// URL's
// last path segment).
func (s *Server) NewApplication(t testing.TB, name string) string {
	t.Helper()
	var app struct {
		ID    int    `json:"id"`
		Token string `json:"token"`
	}
	if err := s.do("POST", "/application", map[string]any{"name": name, "description": "docflow test"}, &app); err != nil {
		t.Fatalf("create gotify application: %v", err)
	}
	if app.Token == "" {
		t.Fatalf("create gotify application: no token in the answer")
	}
	return app.Token
}

// Message is one message the server received.
type Message struct {
	ID            int       `json:"id"`
	ApplicationID int       `json:"appid"`
	Title         string    `json:"title"`
	Message       string    `json:"message"`
	Priority      int       `json:"priority"`
	Date          time.Time `json:"date"`
}

// Messages lists the messages received, oldest first.
func (s *Server) Messages() ([]Message, error) {
	var out struct {
		Messages []Message `json:"messages"`
	}
	if err := s.do("GET", "/message?limit=200", nil, &out); err != nil {
		return nil, err
	}
	for i, j := 0, len(out.Messages)-1; i < j; i, j = i+1, j-1 { // newest first on the wire
		out.Messages[i], out.Messages[j] = out.Messages[j], out.Messages[i]
	}
	return out.Messages, nil
}

// WaitFor waits up to d for at least n messages and returns them, oldest
// first.
func (s *Server) WaitFor(t testing.TB, n int, d time.Duration) []Message {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		msgs, err := s.Messages()
		if err == nil && len(msgs) >= n {
			return msgs
		}
		if time.Now().After(deadline) {
			t.Fatalf("gotify: %d messages within %v, want %d (last error %v)", len(msgs), d, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
