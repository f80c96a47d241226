package notify

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// mailpitBin is where scripts/mailpit.sh builds Mailpit.
func mailpitBin(t *testing.T) string {
	home, _ := os.UserHomeDir()
	bin := filepath.Join(home, ".cache", "docflow-test-bin", "mailpit-v1.33.1", "mailpit")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Mailpit not built (%v): run scripts/mailpit.sh (make services)", err)
	}
	return bin
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// mailto reaches a real SMTP server (Mailpit), with SMTP authentication,
// and arrives with its subject, recipients and body.
func TestMailtoThroughMailpit(t *testing.T) {
	bin := mailpitBin(t)
	smtpPort, webPort := freePort(t), freePort(t)
	cmd := exec.Command(bin, "--smtp", "127.0.0.1:"+strconv.Itoa(smtpPort), "--listen", "127.0.0.1:"+strconv.Itoa(webPort),
		"--database", filepath.Join(t.TempDir(), "mp.db"), "--smtp-auth-accept-any", "--smtp-auth-allow-insecure",
		"--disable-version-check")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	api := "http://127.0.0.1:" + strconv.Itoa(webPort) + "/api/v1/messages"
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(api)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Mailpit did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	st := settings{"NOTIFICATION_URLS": "mailto://ops@example.com?to=audit@example.org", "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
		"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(smtpPort), "SMTP_FROM": "docflow@example.com",
		"SMTP_USERNAME": "docflow", "SMTP_PASSWORD": "pw"}
	rep := New(st, zerolog.Nop()).Notify(context.Background(), docflow.Notification{Title: "Zahlungsproblem für Ann", Body: "card expired"})
	if rep.Status != docflow.NotifySuccess {
		t.Fatalf("report: %+v", rep)
	}
	var got struct {
		Total    int `json:"total"`
		Messages []struct {
			Subject string
			Snippet string
			From    struct{ Address string }
			To      []struct{ Address string }
		} `json:"messages"`
	}
	resp, err := http.Get(api)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Total != 1 || len(got.Messages) != 1 {
		t.Fatalf("messages: %+v", got)
	}
	m := got.Messages[0]
	var to []string
	for _, a := range m.To {
		to = append(to, a.Address)
	}
	if m.Subject != "Zahlungsproblem für Ann" || m.From.Address != "docflow@example.com" ||
		strings.Join(to, ",") != "ops@example.com,audit@example.org" || !strings.Contains(m.Snippet, "card expired") {
		t.Errorf("message: %+v", m)
	}
}
