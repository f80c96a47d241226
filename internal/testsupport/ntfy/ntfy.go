// Package ntfy runs an ntfy server (heckel.io/ntfy/v2) for tests, when one
// is built in the test-server cache.
//
// NOTE: scripts/testbin.sh cannot build it here: the Go module proxy
// refuses heckel.io/ntfy/v2 (403 Forbidden on its version list, and on
// v2.23.0, v2.17.0, v2.11.0, v2.0.0) and heckel.io/ntfy v1.31.0, so tests
// that need it skip and say why. A binary put at
// $HOME/.cache/docflow-test-bin/ntfy-<Version>/ntfy (built elsewhere) is
// used as is.
package ntfy

import (
	"bufio"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"docflow/internal/testsupport/testbin"
)

// Version is the ntfy release the tests expect in the cache.
const Version = "v2.11.0"

// Unavailable is why the tests that need an ntfy server skip on machines
// without one.
const Unavailable = "no ntfy server to test against: the Go module proxy refuses heckel.io/ntfy/v2 " +
	"(403 Forbidden for its version list and for v2.23.0, v2.17.0, v2.11.0, v2.0.0) and heckel.io/ntfy v1.31.0, " +
	"so scripts/testbin.sh cannot build it; the ntfy channel's requests are checked against a local HTTP " +
	"receiver instead (integrations/notify TestNotifyEveryChannel)"

// Binary is where a built ntfy would be (DOCFLOW_TEST_BIN overrides the
// cache folder).
func Binary() string { return testbin.Path("ntfy", Version, "ntfy") }

// Server is a running ntfy.
type Server struct {
	URL      string // http://127.0.0.1:port
	HostPort string // for ntfy:// notification URLs
}

// Start runs ntfy until the test ends, or skips the test with
// Unavailable when no binary is in the cache.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s (looked for %s)", Unavailable, bin)
	}
	return testbin.Start(t, "ntfy", func() (*Server, error) { return start(t, bin) })
}

func start(t testing.TB, bin string) (*Server, error) {
	port, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), HostPort: "127.0.0.1:" + strconv.Itoa(port)}
	proc, err := testbin.Launch("ntfy", dir, bin, []string{"serve", "--listen-http", s.HostPort,
		"--cache-file", filepath.Join(dir, "cache.db"), "--base-url", s.URL}, func(cmd *exec.Cmd) { cmd.Dir = dir })
	if err != nil {
		return nil, err
	}
	if err := proc.WaitReady(20*time.Second, s.URL, func() bool {
		resp, err := client.Get(s.URL + "/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}); err != nil {
		return nil, err
	}
	t.Cleanup(proc.Stop)
	return s, nil
}

var client = &nethttp.Client{Timeout: 10 * time.Second}

// Message is one message published to a topic.
type Message struct {
	Title    string `json:"title"`
	Message  string `json:"message"`
	Priority int    `json:"priority"`
}

// Messages polls the messages cached for topic, oldest first.
func (s *Server) Messages(topic string) ([]Message, error) {
	resp, err := client.Get(s.URL + "/" + url.PathEscape(topic) + "/json?poll=1&since=all")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("poll %s: %s", topic, resp.Status)
	}
	var out []Message
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m struct {
			Message
			Event string `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, err
		}
		if m.Event == "message" {
			out = append(out, m.Message)
		}
	}
	return out, sc.Err()
}
