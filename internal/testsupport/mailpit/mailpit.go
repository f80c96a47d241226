// Package mailpit runs a Mailpit server (a real SMTP server with a REST
// API to read what arrived) for tests, on free 127.0.0.1 ports. The binary
// is built once per machine by scripts/testbin.sh (make deps) into
// $HOME/.cache/docflow-test-bin/mailpit-<Version>/.
package mailpit

import (
	"encoding/json"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow/internal/testsupport/testbin"
)

// Version is the Mailpit release scripts/testbin.sh builds.
const Version = "v1.33.1"

// Binary is where scripts/testbin.sh puts the mailpit binary
// (DOCFLOW_TEST_BIN overrides the cache folder).
func Binary() string { return testbin.Path("mailpit", Version, "mailpit") }

// Server is a running Mailpit.
type Server struct {
	SMTPHost string
	SMTPPort int
	// API is the base URL of its web server (REST API under /api/v1).
	API string
}

// Start runs Mailpit until the test ends. It fails the test when the
// binary is missing (run make deps), and skips it only when
// DOCFLOW_SKIP_MAILPIT is set.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := testbin.Require(t, "Mailpit", "mailpit", Version, "mailpit", "DOCFLOW_SKIP_MAILPIT", "the mail tests")
	return testbin.Start(t, "Mailpit", func() (*Server, error) { return start(t, bin) })
}

func start(t testing.TB, bin string) (*Server, error) {
	smtpPort, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	webPort, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	proc, err := testbin.Launch("mailpit", dir, bin, []string{
		"--smtp", "127.0.0.1:" + strconv.Itoa(smtpPort),
		"--listen", "127.0.0.1:" + strconv.Itoa(webPort),
		"--database", filepath.Join(dir, "mp.db"),
		"--smtp-auth-accept-any", "--smtp-auth-allow-insecure", "--disable-version-check"}, nil)
	if err != nil {
		return nil, err
	}
	s := &Server{SMTPHost: "127.0.0.1", SMTPPort: smtpPort, API: "http://127.0.0.1:" + strconv.Itoa(webPort)}
	if err := proc.WaitReady(20*time.Second, s.API, func() bool {
		if _, err := s.Messages(); err != nil {
			return false
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(s.SMTPHost, strconv.Itoa(smtpPort)), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return nil, err
	}
	t.Cleanup(proc.Stop)
	return s, nil
}

// Message is a summary of one message in Mailpit.
type Message struct {
	ID      string `json:"ID"`
	Subject string `json:"Subject"`
	To      []struct {
		Address string `json:"Address"`
	} `json:"To"`
}

var client = &nethttp.Client{Timeout: 10 * time.Second}

func (s *Server) getJSON(path string, v any) error {
	resp, err := client.Get(s.API + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Messages lists the messages that arrived, newest first.
func (s *Server) Messages() ([]Message, error) {
	var out struct {
		Messages []Message `json:"messages"`
	}
	err := s.getJSON("/api/v1/messages?limit=500", &out)
	return out.Messages, err
}

// Text returns the plain-text body of message id.
func (s *Server) Text(id string) (string, error) {
	var m struct {
		Text string `json:"Text"`
	}
	err := s.getJSON("/api/v1/message/"+url.PathEscape(id), &m)
	return m.Text, err
}

// Count is how many messages went to address.
func (s *Server) Count(address string) (int, error) {
	msgs, err := s.Messages()
	n := 0
	for _, m := range msgs {
		for _, to := range m.To {
			if strings.EqualFold(to.Address, address) {
				n++
			}
		}
	}
	return n, err
}

// WaitFor waits up to d for the n-th message (counting from 1, oldest
// first) to address and returns its subject and text.
func (s *Server) WaitFor(t testing.TB, address string, n int, d time.Duration) (subject, text string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		msgs, err := s.Messages()
		var mine []Message
		for i := len(msgs) - 1; i >= 0; i-- {
			for _, to := range msgs[i].To {
				if strings.EqualFold(to.Address, address) {
					mine = append(mine, msgs[i])
				}
			}
		}
		if err == nil && len(mine) >= n {
			text, err := s.Text(mine[n-1].ID)
			if err != nil {
				t.Fatalf("read message %s: %v", mine[n-1].ID, err)
			}
			return mine[n-1].Subject, text
		}
		if time.Now().After(deadline) {
			t.Fatalf("no message %d to %s within %v (have %d; last error %v)", n, address, d, len(mine), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
