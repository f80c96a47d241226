// Package mailpit runs a Mailpit server (a real SMTP server with a REST
// API to read what arrived) for tests, on free 127.0.0.1 ports. The binary
// is built once per machine by scripts/testbin.sh (make deps) into
// $HOME/.cache/docflow-test-bin/mailpit-<Version>/.
package mailpit

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
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

// Start runs Mailpit until the test ends, accepting any login. It fails
// the test when the binary is missing (run make deps), and skips it only
// when DOCFLOW_SKIP_MAILPIT is set.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// Options change how Mailpit answers.
type Options struct {
	// Users, when set, are the only logins accepted (name → password);
	// else any login, or none, is.
	Users map[string]string
	// AllowedRecipients, when set, is a regular expression recipients
	// must match; others are refused.
	AllowedRecipients string
	// MaxMessageMB bounds a message's size (0: Mailpit's default, 50;
	// negative: no bound).
	MaxMessageMB int
	// ChaosTriggers makes the SMTP server fail on purpose
	// ("Recipient:452:100": every RCPT answered 452).
	ChaosTriggers string
}

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin := testbin.Require(t, "Mailpit", "mailpit", Version, "mailpit", "DOCFLOW_SKIP_MAILPIT", "the mail tests")
	return testbin.Start(t, "Mailpit", func() (*Server, error) { return start(t, bin, o) })
}

func start(t testing.TB, bin string, o Options) (*Server, error) {
	smtpPort, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	webPort, err := testbin.FreePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	args := []string{
		"--smtp", "127.0.0.1:" + strconv.Itoa(smtpPort),
		"--listen", "127.0.0.1:" + strconv.Itoa(webPort),
		"--database", filepath.Join(dir, "mp.db"),
		"--smtp-auth-allow-insecure", "--disable-version-check"}
	if len(o.Users) > 0 {
		var lines strings.Builder
		for u, p := range o.Users {
			fmt.Fprintf(&lines, "%s:%s\n", u, p)
		}
		auth := filepath.Join(dir, "smtp-users")
		if err := os.WriteFile(auth, []byte(lines.String()), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--smtp-auth-file", auth)
	} else {
		args = append(args, "--smtp-auth-accept-any")
	}
	if o.AllowedRecipients != "" {
		args = append(args, "--smtp-allowed-recipients", o.AllowedRecipients)
	}
	if o.ChaosTriggers != "" {
		args = append(args, "--enable-chaos", "--chaos-triggers", o.ChaosTriggers)
	}
	if o.MaxMessageMB != 0 {
		args = append(args, "--max-message-size", strconv.Itoa(max(o.MaxMessageMB, 0)))
	}
	proc, err := testbin.Launch("mailpit", dir, bin, args, nil)
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

// client reads Mailpit's API; a minute, as a message of tens of MiB is
// parsed before it is answered, slowly on a loaded machine.
var client = &nethttp.Client{Timeout: time.Minute}

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

// Detail is one message as Mailpit parsed it.
type Detail struct {
	ID        string `json:"ID"`
	MessageID string `json:"MessageID"`
	From      struct {
		Address string `json:"Address"`
	} `json:"From"`
	To []struct {
		Address string `json:"Address"`
	} `json:"To"`
	Subject     string `json:"Subject"`
	Text        string `json:"Text"`
	Attachments []struct {
		PartID      string `json:"PartID"`
		FileName    string `json:"FileName"`
		ContentType string `json:"ContentType"`
		Size        int64  `json:"Size"`
	} `json:"Attachments"`
}

// Message returns message id as Mailpit parsed it.
func (s *Server) Message(id string) (*Detail, error) {
	var d Detail
	err := s.getJSON("/api/v1/message/"+url.PathEscape(id), &d)
	return &d, err
}

// Part returns the bytes of part partID of message id (an attachment),
// as a stream the caller closes.
func (s *Server) Part(id, partID string) (io.ReadCloser, error) {
	resp, err := client.Get(s.API + "/api/v1/message/" + url.PathEscape(id) + "/part/" + url.PathEscape(partID))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, fmt.Errorf("part %s of %s: %s", partID, id, resp.Status)
	}
	return resp.Body, nil
}
