package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow/integrations/imap/imaptest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// TestBuiltAPIIMAPSource: a mailbox added through the API (single-user
// mode, the README's curl) becomes documents of channel email, its status
// shows them, the test endpoint gives the server's reason for a wrong
// password, and a deactivated source takes no more mail.
func TestBuiltAPIIMAPSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := imaptest.MemServer(t, "alice", "secret", true)
	host, port, _ := net.SplitHostPort(addr)
	logs := &testsupport.LogBuffer{}
	log := zerolog.New(logs).Level(zerolog.InfoLevel)
	a := apptest.New(t, apptest.Options{Role: "serve", Log: &log, Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := nethttp.NewRequest(method, a.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), `"secret"`) || strings.Contains(string(b), "wrong-pass") {
			t.Fatalf("%s leaks credentials: %s", path, b)
		}
		return resp.StatusCode, b
	}
	cfg := fmt.Sprintf(`{"host": %q, "port": %s, "security": "none", "poll_interval": 10}`, host, port)
	if status, b := call("POST", "/api/integrations/test", `{"integration_type": "IMAP", "config": `+cfg+`, "credentials": {"username": "alice", "password": "wrong-pass"}}`); status != 200 ||
		!strings.Contains(string(b), `"success":false`) || !strings.Contains(string(b), "login refused") {
		t.Fatalf("test with a wrong password: %d %s", status, b)
	}
	if status, b := call("POST", "/api/integrations/test", `{"integration_type": "IMAP", "config": `+cfg+`, "credentials": {"username": "alice", "password": "secret"}}`); status != 200 ||
		!strings.Contains(string(b), `"success":true`) {
		t.Fatalf("test: %d %s", status, b)
	}
	status, b := call("POST", "/api/integrations/", `{"direction": "SOURCE", "integration_type": "IMAP", "name": "Scans", "config": `+cfg+`, "credentials": {"username": "alice", "password": "secret"}}`)
	if status != 201 {
		t.Fatalf("create: %d %s", status, b)
	}
	var in struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(b, &in)
	mails := [][]byte{
		imaptest.Mail("a@x", "Invoice A", imaptest.Attachment{Name: "a.pdf", ContentType: "application/pdf", Data: imaptest.PDF("a", 500)}),
		imaptest.Mail("b@x", "Invoice B", imaptest.Attachment{Name: "b.pdf", ContentType: "application/pdf", Data: imaptest.PDF("b", 500)},
			imaptest.Attachment{Name: "b.exe", Data: []byte("MZ")}),
	}
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", mails...); err != nil {
		t.Fatal(err)
	}
	type sourceStatus struct {
		State             string  `json:"state"`
		LastPollAt        *string `json:"last_poll_at"`
		MessagesSeen      int     `json:"messages_seen"`
		DocumentsIngested int     `json:"documents_ingested"`
	}
	var list []struct {
		ID         int64        `json:"id"`
		Status     sourceStatus `json:"status"`
		LastUsedAt *string      `json:"last_used_at"`
	}
	end := time.Now().Add(time.Minute)
	for {
		_, b := call("GET", "/api/integrations/?direction=SOURCE", "")
		_ = json.Unmarshal(b, &list)
		if len(list) == 1 && list[0].Status.DocumentsIngested == 2 && list[0].Status.MessagesSeen == 2 && list[0].LastUsedAt != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("status: %s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if list[0].Status.State != "connected" || list[0].Status.LastPollAt == nil {
		t.Fatalf("status = %+v", list[0].Status)
	}
	_, b = call("GET", "/api/files?per_page=10", "")
	if !strings.Contains(string(b), `"a.pdf"`) || !strings.Contains(string(b), `"b.pdf"`) || strings.Contains(string(b), "b.exe") {
		t.Fatalf("files: %s", b)
	}
	// Deactivated: later mail stays in the mailbox.
	if status, b := call("PUT", fmt.Sprintf("/api/integrations/%d", in.ID), `{"is_active": false}`); status != 200 {
		t.Fatalf("deactivate: %d %s", status, b)
	}
	// The supervisor stops the source at its next scan (at once: the
	// change wakes it), however long that takes on a loaded machine.
	stopped := fmt.Sprintf(`"integration":%d,"message":"sources: source stopped"`, in.ID)
	testsupport.WaitFor(t, 3*time.Minute, "the deactivated source stopped", func() bool { return strings.Contains(logs.String(), stopped) })
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", imaptest.Mail("c@x", "late",
		imaptest.Attachment{Name: "c.pdf", Data: imaptest.PDF("c", 500)})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a source still running would have taken it by now
	if _, unseen, _ := imaptest.Count(addr, "alice", "secret", "INBOX"); unseen != 1 {
		t.Fatalf("a deactivated source took mail: %d unseen", unseen)
	}
	if status, _ := call("DELETE", fmt.Sprintf("/api/integrations/%d", in.ID), ""); status != 204 {
		t.Fatalf("delete: %d", status)
	}
}
